//go:build linux

package tap

import (
	"testing"
	"time"

	"github.com/netramp/netramp/counters"
	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// fakeDevice stands for a TUN device: its write answers come from a script
// (then success), and sleeping only adds up the time asked for, so the
// retry budget is exact at any load.
type fakeDevice struct {
	answers []error
	writes  int
	slept   time.Duration
}

func (f *fakeDevice) writev(bufs [][]byte) (int, error) {
	f.writes++
	if len(f.answers) > 0 {
		err := f.answers[0]
		f.answers = f.answers[1:]
		return 0, err
	}
	n := 0
	for _, b := range bufs {
		n += len(b)
	}
	return n, nil
}

func fakeEndpoint(t *testing.T, f *fakeDevice) (*Endpoint, *counters.Registry) {
	t.Helper()
	r := counters.NewRegistry()
	e, err := New(&Device{cfg: Config{TUN: true}}, Options{Counters: r})
	if err != nil {
		t.Fatal(err)
	}
	e.tx.writev = f.writev
	e.tx.sleep = func(d time.Duration) { f.slept += d }
	e.tx.waitWritable = func() (bool, error) { return true, nil }
	return e, r
}

func packets(n int) stack.PacketBufferList {
	var l stack.PacketBufferList
	for i := 0; i < n; i++ {
		l.PushBack(stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(make([]byte, 100))}))
	}
	return l
}

func eagains(n int) []error {
	s := make([]error, n)
	for i := range s {
		s[i] = unix.EAGAIN
	}
	return s
}

// TestTxRetriesEAGAINWithinBudget: a device full for a moment (two EAGAINs)
// takes the frame on the third try, nothing is dropped, and the credit
// stays open.
func TestTxRetriesEAGAINWithinBudget(t *testing.T) {
	f := &fakeDevice{answers: eagains(2)}
	e, _ := fakeEndpoint(t, f)
	pkts := packets(1)
	defer pkts.DecRef()
	n, err := e.WritePackets(pkts)
	if n != 1 || err != nil {
		t.Fatalf("WritePackets = %d, %v; want 1, nil", n, err)
	}
	if got := e.c.TxRetries.Load(); got != 2 {
		t.Errorf("%d retries, want 2", got)
	}
	if d := e.c.TxDrops.Load(); d != 0 {
		t.Errorf("%d drops, want 0", d)
	}
	if e.TxCredit().TxFree() == 0 {
		t.Error("credit reads 0 after the frame was taken")
	}
}

// TestTxFullDeviceDropsAfterTheBatchBudget: a device that stays full costs
// one batch at most TxRetryBudget of retries, then every frame is dropped
// and counted, the credit reads zero, and a waiter runs once the device has
// room again.
func TestTxFullDeviceDropsAfterTheBatchBudget(t *testing.T) {
	f := &fakeDevice{answers: eagains(1000)}
	e, _ := fakeEndpoint(t, f)
	pkts := packets(3)
	defer pkts.DecRef()
	n, err := e.WritePackets(pkts)
	if n != 0 {
		t.Fatalf("WritePackets took %d frames from a full device", n)
	}
	if _, ok := err.(*tcpip.ErrNoBufferSpace); !ok {
		t.Fatalf("WritePackets error %v, want ErrNoBufferSpace", err)
	}
	if f.slept > TxRetryBudget {
		t.Errorf("the batch waited %v, over the %v budget", f.slept, TxRetryBudget)
	}
	if want := int(TxRetryBudget / txRetryStep); int(e.c.TxRetries.Load()) != want {
		t.Errorf("%d retries, want %d (the budget in steps, shared by the batch)", e.c.TxRetries.Load(), want)
	}
	if d, full := e.c.TxDrops.Load(), e.c.TxFull.Load(); d != 3 || full != 3 {
		t.Errorf("drops %d (full %d), want 3 and 3", d, full)
	}
	c := e.TxCredit()
	if c.TxFree() != 0 {
		t.Errorf("credit reads %d with the device full, want 0", c.TxFree())
	}
	ran := make(chan struct{})
	c.NotifyTxFree(func() { close(ran) })
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter never ran after the device reported room")
	}
	if c.TxFree() == 0 {
		t.Error("credit still 0 after the device reported room")
	}
}

// TestTxOtherErrorsDropWithoutRetry: an error other than EAGAIN is counted
// as a device error and drops the frame at once.
func TestTxOtherErrorsDropWithoutRetry(t *testing.T) {
	f := &fakeDevice{answers: []error{unix.EIO}}
	e, _ := fakeEndpoint(t, f)
	pkts := packets(2)
	defer pkts.DecRef()
	n, err := e.WritePackets(pkts)
	if n != 1 || err != nil {
		t.Fatalf("WritePackets = %d, %v; want 1, nil", n, err)
	}
	if e.c.TxErrors.Load() != 1 || e.c.TxRetries.Load() != 0 || f.writes != 2 {
		t.Errorf("errors %d retries %d writes %d, want 1, 0, 2", e.c.TxErrors.Load(), e.c.TxRetries.Load(), f.writes)
	}
}
