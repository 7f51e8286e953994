package wire

import (
	"sync"
	"testing"
	"time"

	"github.com/netramp/netramp/stack/vclock"
)

// frameLog is a FrameSink that keeps the sequence numbers it was handed.
type frameLog struct {
	mu  sync.Mutex
	ids []uint32
}

func (l *frameLog) DeliverFrame(b []byte) {
	l.mu.Lock()
	l.ids = append(l.ids, idOf(b))
	l.mu.Unlock()
}

func (l *frameLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ids)
}

// inOrder fails t unless the frames logged are ids 0, 1, 2, ... in that
// order; who names the receiver in the message.
func (l *frameLog) inOrder(t *testing.T, who string) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, id := range l.ids {
		if id != uint32(i) {
			t.Fatalf("%s got frame %d as its %d-th", who, id, i)
		}
	}
}

// newRealTimeWire is a real-time wire on cfg, closed when t ends.
func newRealTimeWire(t *testing.T, cfg Config) *Wire {
	t.Helper()
	w, err := NewRealTime(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w
}

func idOf(b []byte) uint32 {
	t := b[20:]
	return uint32(t[4])<<24 | uint32(t[5])<<16 | uint32(t[6])<<8 | uint32(t[7])
}

// TestWriteFrameReachesTheSinkInOrder: frames written as bytes (as from a
// TUN device) cross the path and reach a FrameSink in order, in virtual time
// as in real time; a real-time wire records each one's lateness, and
// Lateness counts both directions' frames. Real time
// asserts no timing, only that everything arrives and is measured.
func TestWriteFrameReachesTheSinkInOrder(t *testing.T) {
	cfg := Config{AtoB: Dir{RateBps: 100e6, Delay: 2 * time.Millisecond}, BtoA: Dir{Delay: 2 * time.Millisecond}, Seed: 1}
	for _, realTime := range []bool{false, true} {
		var w *Wire
		var err error
		var clk *vclock.Clock
		if realTime {
			w, err = NewRealTime(cfg)
		} else {
			clk = vclock.New(epoch)
			w, err = New(clk, cfg)
		}
		if err != nil {
			t.Fatal(err)
		}
		var got, back frameLog
		w.B().AttachSink(&got)
		w.A().AttachSink(&back)
		const n, nBack = 150, 10
		for i := uint32(0); i < n; i++ {
			if terr := w.A().WriteFrame(data(i, 1000)); terr != nil {
				t.Fatalf("WriteFrame %d: %v", i, terr)
			}
		}
		for i := uint32(0); i < nBack; i++ {
			if terr := w.B().WriteFrame(data(i, 100)); terr != nil {
				t.Fatalf("WriteFrame back %d: %v", i, terr)
			}
		}
		if realTime {
			end := time.Now().Add(20 * time.Second)
			for (got.count() < n || back.count() < nBack) && time.Now().Before(end) {
				time.Sleep(time.Millisecond)
			}
		} else {
			clk.RunFor(time.Second)
		}
		w.Close()
		if got.count() != n {
			t.Fatalf("real time %v: %d of %d frames reached the sink", realTime, got.count(), n)
		}
		for i, id := range got.ids {
			if id != uint32(i) {
				t.Fatalf("real time %v: frame %d is id %d", realTime, i, id)
			}
		}
		a2b, _ := w.Stats()
		if realTime != (a2b.Lateness.Frames == n) {
			t.Errorf("real time %v: lateness of %d frames recorded", realTime, a2b.Lateness.Frames)
		}
		if both := w.Lateness(); realTime != (both.Frames == n+nBack) {
			t.Errorf("real time %v: the wire's lateness covers %d frames, want both directions' %d", realTime, both.Frames, n+nBack)
		}
		if realTime {
			t.Logf("real-time wire: %v (SCHED_FIFO %v)", a2b.Lateness, a2b.Lateness.SchedFIFO)
		}
	}
}

// TestSteadyFramePathAllocatesNothing: once the wire's recycled events and
// buffers are warm, a frame written as bytes and delivered to a sink
// allocates nothing.
func TestSteadyFramePathAllocatesNothing(t *testing.T) {
	clk := vclock.New(epoch)
	w, err := New(clk, Config{AtoB: Dir{RateBps: 1e9, Delay: time.Millisecond}, NoTraceHash: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var sink countSink
	w.B().AttachSink(&sink)
	f := data(1, 1400)
	send := func() {
		for i := 0; i < 32; i++ {
			w.A().WriteFrame(f)
		}
		clk.RunFor(2 * time.Millisecond)
	}
	for i := 0; i < 10; i++ {
		send()
	}
	if a := testing.AllocsPerRun(20, send); a > 0 {
		t.Errorf("%.1f allocations per 32 frames, want 0", a)
	}
	if sink.n == 0 {
		t.Fatal("nothing delivered")
	}
}

type countSink struct{ n int }

func (c *countSink) DeliverFrame([]byte) { c.n++ }
