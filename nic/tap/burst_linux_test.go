//go:build linux

package tap_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/netramp/netramp/nic"
	"github.com/netramp/netramp/nic/tap"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// burstLog is a dispatcher that listens for bursts and logs, in order,
// "begin", "end" and one "frame" a delivery; the reader goroutine calls it.
type burstLog struct {
	mu     sync.Mutex
	events []string
	frames int
}

func (l *burstLog) log(ev string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, ev)
	if ev == "frame" {
		l.frames++
	}
}

func (l *burstLog) DeliverNetworkPacket(tcpip.NetworkProtocolNumber, *stack.PacketBuffer) {
	l.log("frame")
}
func (l *burstLog) DeliverLinkPacket(tcpip.NetworkProtocolNumber, *stack.PacketBuffer) {}
func (l *burstLog) BeginBurst()                                                        { l.log("begin") }
func (l *burstLog) EndBurst()                                                          { l.log("end") }

var _ nic.BurstDispatcher = (*burstLog)(nil)

// snapshot is the log so far and its frame count.
func (l *burstLog) snapshot() ([]string, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.events...), l.frames
}

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
	log := &burstLog{}
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
		events, frames = log.snapshot()
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
	ep.Attach(&burstLog{})
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
