package wire

import (
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// stuckStack is a dispatcher whose first delivery blocks until released, as
// a stack whose lock an ordinary thread holds; it counts what it got.
type stuckStack struct {
	release chan struct{}
	got     chan uint32
}

func (s *stuckStack) DeliverNetworkPacket(_ tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) {
	<-s.release
	s.got <- idOf(pkt.ToView().AsSlice())
}

func (*stuckStack) DeliverLinkPacket(tcpip.NetworkProtocolNumber, *stack.PacketBuffer) {}

// TestRealTimeWireDoesNotWaitForAStack: on a real-time wire, a stack that
// blocks in its input delays only its own frames: frames the other way keep
// reaching their sink while it is stuck, and once it returns it gets every
// frame, in order.
func TestRealTimeWireDoesNotWaitForAStack(t *testing.T) {
	w, err := NewRealTime(Config{AtoB: Dir{Delay: time.Millisecond}, BtoA: Dir{Delay: time.Millisecond}, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	st := &stuckStack{release: make(chan struct{}), got: make(chan uint32, 16)}
	w.B().Attach(st)
	var back frameLog
	w.A().AttachSink(&back)
	const n = 10
	for i := uint32(0); i < n; i++ {
		if terr := w.A().WriteFrame(data(i, 100)); terr != nil {
			t.Fatal(terr)
		}
	}
	time.Sleep(10 * time.Millisecond) // the first frame reaches the stuck stack
	for i := uint32(0); i < n; i++ {
		if terr := w.B().WriteFrame(data(i, 100)); terr != nil {
			t.Fatal(terr)
		}
	}
	end := time.Now().Add(10 * time.Second)
	for back.count() < n && time.Now().Before(end) {
		time.Sleep(time.Millisecond)
	}
	if back.count() != n {
		t.Fatalf("%d of %d frames reached A's sink while B's stack was stuck", back.count(), n)
	}
	close(st.release)
	for i := uint32(0); i < n; i++ {
		select {
		case id := <-st.got:
			if id != i {
				t.Fatalf("B's stack got frame %d as its %d-th", id, i)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("B's stack got %d of %d frames", i, n)
		}
	}
}
