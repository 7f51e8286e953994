//go:build linux

package tap_test

import (
	"strings"
	"testing"
	"time"

	"github.com/netramp/netramp/nic/bursttest"
	"github.com/netramp/netramp/nic/tap"
)

// TestTAPReaderDeliversInBurstsThatEndWhenIdle: the kernel's answers to a
// flight of echo requests reach the stack inside bursts, each begun before
// its first frame, holding at most 64 frames, and ended once the device
// has nothing more to read.
func TestTAPReaderDeliversInBurstsThatEndWhenIdle(t *testing.T) {
	_, dev := kernelSide(t, tap.Config{})
	ep, err := tap.New(dev, tap.Options{MAC: ourMAC})
	if err != nil {
		t.Fatal(err)
	}
	log := &bursttest.Log{}
	ep.Attach(log)
	t.Cleanup(func() { ep.Attach(nil); ep.Wait() })
	const requests = 100
	for i := range requests {
		if _, err := dev.Write(echoRequest(uint16(i), []byte("burst"))); err != nil {
			t.Fatalf("write: %v", err)
		}
	}
	var events []string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var frames int
		events, frames = log.Snapshot()
		if frames >= requests && events[len(events)-1] == "end" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 5 s: %d frames, log ends %q", frames, events[max(len(events)-3, 0):])
		}
	}
	open, inBurst, most := false, 0, 0
	for i, ev := range events {
		switch {
		case ev == "begin" && !open:
			open, inBurst = true, 0
		case ev == "frame" && open:
			inBurst++
			most = max(most, inBurst)
		case ev == "end" && open && inBurst > 0:
			open = false
		default:
			t.Fatalf("event %d %q out of place: %s", i, ev, strings.Join(events[max(i-4, 0):i+1], " "))
		}
	}
	if most > 64 {
		t.Errorf("a burst held %d frames, want at most 64", most)
	}
	t.Logf("%d events, at most %d frames a burst", len(events), most)
}

// TestTAPDetachStopsReader: detaching the endpoint (Attach(nil), as a
// gVisor stack removing the NIC does) stops its reader, so a Wait after it
// returns, as gVisor's Stack.Wait expects of a link it removes.
func TestTAPDetachStopsReader(t *testing.T) {
	_, dev := kernelSide(t, tap.Config{})
	ep, err := tap.New(dev, tap.Options{MAC: ourMAC})
	if err != nil {
		t.Fatal(err)
	}
	ep.Attach(&bursttest.Log{})
	ep.Attach(nil)
	stopped := make(chan struct{})
	go func() { ep.Wait(); close(stopped) }()
	// The bound detects a reader that never stops, not a speed.
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not return after Attach(nil): the reader was not stopped")
	}
	if err := ep.Err(); err != nil {
		t.Errorf("reader stopped with %v, want no error (a closed device)", err)
	}
}
