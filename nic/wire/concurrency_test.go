package wire

import (
	"sync"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// lockedSink records frames delivered from timer goroutines.
type lockedSink struct {
	mu   sync.Mutex
	got  [][]byte
	onRx func([]byte)
	done chan struct{}
	want int
}

func (s *lockedSink) DeliverNetworkPacket(_ tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) {
	v := pkt.ToView()
	b := append([]byte(nil), v.AsSlice()...)
	v.Release()
	s.mu.Lock()
	s.got = append(s.got, b)
	if len(s.got) == s.want {
		close(s.done)
	}
	s.mu.Unlock()
	if s.onRx != nil {
		s.onRx(b)
	}
}

func (*lockedSink) DeliverLinkPacket(tcpip.NetworkProtocolNumber, *stack.PacketBuffer) {}

// TestRealTimeWireIsSafeUnderConcurrentWriters runs the wire on the wall
// clock with four writers retrying on a full ring and the far side answering
// from the delivery callback; run with -race it checks the locking, and it
// checks that each writer's frames arrive complete and in order.
func TestRealTimeWireIsSafeUnderConcurrentWriters(t *testing.T) {
	const writers, per = 4, 300
	w, err := New(tcpip.NewStdClock(), Config{
		AtoB: Dir{RateBps: 200e6, Delay: time.Millisecond, TxRing: 16, QueueFrames: 1 << 20},
		BtoA: Dir{Delay: time.Millisecond, AckAggSegments: 8, AckAggHold: 5 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	b := &lockedSink{done: make(chan struct{}), want: writers * per}
	a := &lockedSink{done: make(chan struct{}), want: writers * per}
	b.onRx = func(f []byte) { send(w.B(), ack(segID(f))) }
	w.A().Attach(a)
	w.B().Attach(b)
	cr := w.A().TxCredit()
	var wg sync.WaitGroup
	for g := 0; g < writers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				f := data(uint32(g<<16|i), 500)
				for {
					if _, err := send(w.A(), f); err == nil {
						break
					}
					ready := make(chan struct{})
					var once sync.Once
					cancel := cr.NotifyTxFree(func() { once.Do(func() { close(ready) }) })
					select {
					case <-ready:
					case <-time.After(50 * time.Millisecond):
					}
					cancel()
				}
			}
		}()
	}
	wg.Wait()
	for _, s := range []*lockedSink{b, a} {
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			s.mu.Lock()
			n := len(s.got)
			s.mu.Unlock()
			t.Fatalf("delivered %d of %d in 10 s", n, writers*per)
		}
	}
	next := make([]uint32, writers)
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, f := range b.got {
		id := segID(f)
		g, i := id>>16, id&0xffff
		if i != next[g] {
			t.Fatalf("writer %d: frame %d arrived when %d was due", g, i, next[g])
		}
		next[g]++
	}
	s, _ := w.Stats()
	t.Logf("ring refusals %d, queue high-water %d frames", s.DropRing, s.QueueHighFrames)
}

func TestIPv6FramesAreDeliveredAsIPv6(t *testing.T) {
	r := newRig(t, Config{})
	b := make([]byte, header.IPv6MinimumSize+header.TCPMinimumSize)
	header.IPv6(b).Encode(&header.IPv6Fields{PayloadLength: header.TCPMinimumSize, TransportProtocol: header.TCPProtocolNumber, HopLimit: 64})
	header.TCP(b[header.IPv6MinimumSize:]).Encode(&header.TCPFields{DataOffset: header.TCPMinimumSize, Flags: header.TCPFlagAck})
	if c := classify(b); !c.pureAck {
		t.Fatal("an IPv6 pure ACK is not classified as one")
	}
	send(r.w.A(), b)
	r.drain()
	if len(r.b.got) != 1 || r.b.got[0].proto != header.IPv6ProtocolNumber {
		t.Fatalf("got %+v", r.b.got)
	}
}

func TestClosedWireRefusesWritesAndDeliversNothingMore(t *testing.T) {
	r := newRig(t, Config{AtoB: Dir{Delay: time.Millisecond}})
	send(r.w.A(), data(1, 10))
	r.w.Close()
	r.drain()
	if len(r.b.got) != 0 {
		t.Fatal("a frame in flight was delivered after Close")
	}
	if _, err := send(r.w.A(), data(2, 10)); err == nil {
		t.Fatal("write after Close accepted")
	}
}

// TestDriverInsideADeliveryQueuesRatherThanReenters drives the clock from
// inside a delivery callback: the frames that fall due meanwhile are not
// handed over re-entrantly, but after the callback returns, in order.
func TestDriverInsideADeliveryQueuesRatherThanReenters(t *testing.T) {
	r := newRig(t, Config{AtoB: Dir{Delay: time.Millisecond}})
	depth, maxDepth := 0, 0
	r.b.onRx = func(x rx) {
		depth++
		maxDepth = max(maxDepth, depth)
		if segID(x.b) == 0 {
			r.clk.RunFor(5 * time.Millisecond)
		}
		depth--
	}
	var frames [][]byte
	for i := 0; i < 5; i++ {
		frames = append(frames, data(uint32(i), 10))
	}
	r.sendEvery(t, r.w.A(), time.Millisecond, frames)
	r.drain()
	if maxDepth != 1 {
		t.Fatalf("deliveries nested %d deep", maxDepth)
	}
	if len(r.b.got) != 5 {
		t.Fatalf("delivered %d of 5", len(r.b.got))
	}
	for i, g := range r.b.got {
		if segID(g.b) != uint32(i) {
			t.Fatalf("delivery %d carried frame %d", i, segID(g.b))
		}
	}
}
