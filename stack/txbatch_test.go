package stack

import (
	"context"
	"io"
	"net/netip"
	"sync"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	gstack "gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netramp/netramp/counters"
	"github.com/netramp/netramp/nic/gso"
)

// recLink is one end of gso.NewPipe that records the TCP payload sizes of
// each WritePackets call and fails the calls fail picks (the packets of a
// failed call are not delivered).
type recLink struct {
	*gso.Link
	mu    sync.Mutex
	calls [][]int
	fail  func(call int, pkts []*gstack.PacketBuffer) bool
}

func (l *recLink) WritePackets(pkts gstack.PacketBufferList) (int, tcpip.Error) {
	var sizes []int
	for _, p := range pkts.AsSlice() {
		sizes = append(sizes, p.Data().Size())
	}
	l.mu.Lock()
	call := len(l.calls)
	l.calls = append(l.calls, sizes)
	failed := l.fail != nil && l.fail(call, pkts.AsSlice())
	l.mu.Unlock()
	if failed {
		return 0, &tcpip.ErrClosedForSend{}
	}
	return l.Link.WritePackets(pkts)
}

// dataCalls are the recorded calls that carried payload: their payload
// sizes.
func (l *recLink) dataCalls() [][]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out [][]int
	for _, c := range l.calls {
		for _, s := range c {
			if s > 0 {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

// batchPair joins two stacks of our TCP over gso.NewPipe offering no GSO,
// a's end recorded.
func batchPair(t *testing.T) (*Stack, *Stack, *recLink) {
	t.Helper()
	pa, pb, err := gso.NewPipe(1500, gso.LinkOptions{NoGSO: true})
	if err != nil {
		t.Fatal(err)
	}
	ra := &recLink{Link: pa}
	a, err := New(Options{NICs: []NIC{{Link: ra, Addr: netip.MustParsePrefix("198.18.0.1/24")}}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(Options{NICs: []NIC{{Link: pb, Addr: netip.MustParsePrefix("198.18.0.2/24")}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b, ra
}

// TestOneSendOpportunityIsOneLinkWrite: the segments our TCP sends at one
// opportunity (one Write within the initial window) reach a burst link in
// one WritePackets call, and the receiver, hearing them as one burst, ACKs
// them once at its end instead of every second segment.
func TestOneSendOpportunityIsOneLinkWrite(t *testing.T) {
	a, b, ra := batchPair(t)
	l, err := b.Listen(netip.MustParseAddrPort("198.18.0.2:5001"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := a.Dial(ctx, netip.MustParseAddrPort("198.18.0.2:5001"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const segs, mss = 7, 1448 // MSS 1460 less the timestamp option
	before := b.Counters().Snapshot()
	if _, err := c.Write(make([]byte, segs*mss)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(s, make([]byte, segs*mss)); err != nil {
		t.Fatal(err)
	}
	calls := ra.dataCalls()
	if len(calls) != 1 || len(calls[0]) != segs {
		t.Fatalf("data reached the link in calls of payload sizes %v, want one call of %d segments", calls, segs)
	}
	after := b.Counters().Snapshot()
	d := func(name string) uint64 { return after[name] - before[name] }
	if n := d("tcp.acks.sent.every-second"); n != 0 {
		t.Errorf("receiver sent %d every-second ACKs for one burst, want 0", n)
	}
	if n := d("tcp.acks.sent.burst-end"); n != 1 {
		t.Errorf("receiver sent %d burst-end ACKs for one burst, want 1", n)
	}
}

// TestFailedGatheredWriteIsRecoveredAsLoss: a gathered write the link fails
// is counted as drops, and the TCP recovers its segments as losses, as it
// does for a packet whose own write fails: the transfer arrives intact.
func TestFailedGatheredWriteIsRecoveredAsLoss(t *testing.T) {
	a, b, ra := batchPair(t)
	failed := 0
	ra.fail = func(call int, pkts []*gstack.PacketBuffer) bool {
		if len(pkts) < 2 || failed >= 3 {
			return false
		}
		failed++
		return true
	}
	transfer(t, a, b, 1<<20)
	if failed == 0 {
		t.Fatal("no gathered write of two or more packets to fail")
	}
	if n := a.Counters().Snapshot()["stack.qdisc.batch-drops"]; n == 0 {
		t.Error("failed gathered writes were not counted as drops")
	}
}

// fakeLink is a LinkWriter that records what it is written, one tag byte a
// packet, and calls onWrite (which may re-enter the qdisc) after recording.
type fakeLink struct {
	mu      sync.Mutex
	calls   [][]byte
	err     tcpip.Error
	onWrite func(call int)
}

func (f *fakeLink) WritePackets(pkts gstack.PacketBufferList) (int, tcpip.Error) {
	var tags []byte
	for _, p := range pkts.AsSlice() {
		tags = append(tags, p.Data().AsRange().ToSlice()[0])
	}
	f.mu.Lock()
	call := len(f.calls)
	f.calls = append(f.calls, tags)
	f.mu.Unlock()
	if f.err != nil {
		return 0, f.err
	}
	if f.onWrite != nil {
		f.onWrite(call)
	}
	return len(tags), nil
}

func tagged(tag byte) *gstack.PacketBuffer {
	return gstack.NewPacketBuffer(gstack.PacketBufferOptions{Payload: buffer.MakeWithData([]byte{tag})})
}

// send writes a packet tagged tag through q as a NIC would: the caller's
// reference is dropped after the write.
func send(q *directQDisc, tag byte) tcpip.Error {
	p := tagged(tag)
	err := q.WritePacket(p)
	p.DecRef()
	return err
}

func gathering(f *fakeLink) *directQDisc {
	return &directQDisc{link: f, gather: true, drops: counters.NewRegistry().MustRegister("stack.qdisc.batch-drops", "test")}
}

// TestGatheredWriteReentryNeitherDeadlocksNorReorders: a link that delivers
// inline may, within its write, have the far stack answer through this
// qdisc on the same goroutine (a batch opened, a packet, closed): that
// packet is queued and written after the outer write returns, in order.
func TestGatheredWriteReentryNeitherDeadlocksNorReorders(t *testing.T) {
	f := &fakeLink{}
	q := gathering(f)
	f.onWrite = func(call int) {
		if call == 0 {
			q.OpenBatch()
			send(q, 3)
			q.CloseBatch()
			send(q, 4) // outside any batch, while the outer write is under way
		}
	}
	q.OpenBatch()
	send(q, 1)
	send(q, 2)
	q.CloseBatch()
	got := f.calls
	if len(got) != 2 || string(got[0]) != "\x01\x02" || string(got[1]) != "\x03\x04" {
		t.Fatalf("link calls %v, want [[1 2] [3 4]]", got)
	}
	if q.open != 0 || q.writing || len(q.q) != 0 {
		t.Errorf("qdisc left open=%d writing=%v queued=%d", q.open, q.writing, len(q.q))
	}
}

// TestGatheredWritesOfManyGoroutinesAllArrive: goroutines gathering on one
// qdisc, some within another's write, all reach the link, each goroutine's
// packets in its order, none left queued (run with -race).
func TestGatheredWritesOfManyGoroutinesAllArrive(t *testing.T) {
	f := &fakeLink{}
	q := gathering(f)
	const writers, each = 8, 200
	f.onWrite = func(call int) {
		if call%7 == 0 {
			send(q, 255) // an inline answer outside any batch
		}
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; {
				q.OpenBatch()
				for k := 0; k < 1+i%5 && i < each; k++ {
					send(q, byte(w))
					i++
				}
				q.CloseBatch()
			}
		}()
	}
	wg.Wait()
	n := make(map[byte]int)
	for _, c := range f.calls {
		if len(c) > maxBatch {
			t.Errorf("a write of %d packets, bound %d", len(c), maxBatch)
		}
		for _, tag := range c {
			n[tag]++
		}
	}
	for w := range byte(writers) {
		if n[w] != each {
			t.Errorf("writer %d: %d packets reached the link, want %d", w, n[w], each)
		}
	}
	if q.open != 0 || q.writing || len(q.q) != 0 {
		t.Errorf("qdisc left open=%d writing=%v queued=%d", q.open, q.writing, len(q.q))
	}
}

// TestGatheredWriteErrorIsCountedAndFreed: packets of a gathered write the
// link fails are counted as drops and their references released; a packet
// written alone still returns the link's error to its sender.
func TestGatheredWriteErrorIsCountedAndFreed(t *testing.T) {
	f := &fakeLink{err: &tcpip.ErrClosedForSend{}}
	q := gathering(f)
	var pkts []*gstack.PacketBuffer
	q.OpenBatch()
	for i := range 3 {
		p := tagged(byte(i))
		if err := q.WritePacket(p); err != nil {
			t.Fatalf("gathered write: %v, want nil", err)
		}
		pkts = append(pkts, p)
	}
	q.CloseBatch()
	if got := q.drops.Load(); got != 3 {
		t.Errorf("drops %d, want 3", got)
	}
	for i, p := range pkts {
		if r := p.ReadRefs(); r != 1 {
			t.Errorf("packet %d: %d references after the failed write, want the sender's 1", i, r)
		}
		p.DecRef()
	}
	if err := send(q, 9); err == nil {
		t.Error("a packet written alone: the link's error was not returned")
	}
}
