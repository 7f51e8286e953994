package tcp_test

import (
	"bytes"
	"net/netip"
	"sync"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/link/pipe"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	gstack "gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/waiter"

	"github.com/netramp/netramp/nic/gso"
	"github.com/netramp/netramp/stack"
	"github.com/netramp/netramp/tcp"
)

// Issue 12: a byte is copied at most twice, from the application into the
// send queue and from the receive store to the application. Between the two
// it is never copied: a packet on the link references the send queue's
// chunks, and the receiver keeps the link's views of in-order data as they
// are, however many views an aggregate spans. Over an in-memory link the
// receiver therefore holds the very memory the sender wrote.

// copyLog sits between the sender's stack (or its gso.Link) and an
// in-memory link. For each packet written it counts the payload bytes that
// do not lie in the sender's send queue (a copy between queue and link) and
// keeps a clone of the payload, so its chunks cannot be reused for other
// bytes while the test looks for them in the receiver's store.
type copyLog struct {
	gstack.LinkEndpoint
	mu      sync.Mutex
	src     tcpip.Endpoint // the sender, once connected
	sent    int            // payload bytes written
	copied  int            // of those, bytes not in the send queue's memory
	views   int            // payload views written: above packets when payloads span views
	packets int
	stale   int // packets acknowledged before the link saw them
	kept    []buffer.Buffer
}

func (l *copyLog) WritePackets(pkts gstack.PacketBufferList) (int, tcpip.Error) {
	for _, pkt := range pkts.AsSlice() {
		if pkt.Data().Size() == 0 {
			continue
		}
		l.mu.Lock()
		q := tcp.SendQueueSlices(l.src)
		payload := pkt.Data().ToBuffer()
		l.packets++
		// A retransmission whose bytes were acknowledged between its
		// build and its write (a timer's probe racing the peer's ACK)
		// references chunks the queue has already let go: its bytes
		// cannot be looked for in the queue, only counted.
		h := header.TCP(pkt.TransportHeader().Slice())
		stale := int32(h.SequenceNumber()+uint32(payload.Size())-tcp.SndUna(l.src)) <= 0
		if stale {
			l.stale++
		}
		vl := payload.AsViewList()
		for v := vl.Front(); v != nil; v = v.Next() {
			b := v.AsSlice()
			l.views++
			l.sent += len(b)
			if !stale && !withinAny(b, q) {
				l.copied += len(b)
			}
		}
		l.kept = append(l.kept, payload)
		l.mu.Unlock()
	}
	return l.LinkEndpoint.WritePackets(pkts)
}

// payloadSlices is the memory of every payload written.
func (l *copyLog) payloadSlices() [][]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out [][]byte
	for _, p := range l.kept {
		vl := p.AsViewList()
		for v := vl.Front(); v != nil; v = v.Next() {
			out = append(out, v.AsSlice())
		}
	}
	return out
}

func (l *copyLog) release() {
	for _, p := range l.kept {
		p.Release()
	}
}

// within reports whether b is memory inside a (not merely equal bytes).
// Slices of one chunk end where the chunk ends, so their capacities give
// b's offset in a.
func within(b, a []byte) bool {
	if len(b) == 0 {
		return true
	}
	k := cap(a) - cap(b)
	return k >= 0 && k+len(b) <= len(a) && &a[k] == &b[0]
}

func withinAny(b []byte, in [][]byte) bool {
	for _, a := range in {
		if within(b, a) {
			return true
		}
	}
	return false
}

// linkMode is how a test's sending link carries the stack's packets.
type linkMode struct {
	name string
	gso  bool // the route offers GSO of 64 KiB...
	gro  bool // ...and the link passes GSO packets on whole, not cut to MTU frames
}

// linkModes are plain MTU-sized segments, GSO packets cut into MTU frames
// (TSO), and GSO packets passed on whole (GRO aggregates).
var linkModes = []linkMode{{"plain", false, false}, {"tso", true, false}, {"gro-aggregate", true, true}}

// over is the link to attach: l itself, or nic/gso's Link over it.
func (m linkMode) over(t *testing.T, l gstack.LinkEndpoint) gstack.LinkEndpoint {
	t.Helper()
	if !m.gso {
		return l
	}
	g, err := gso.NewLink(l, gso.LinkOptions{MaxSize: 64 << 10, GRO: m.gro})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestNoByteIsCopiedBetweenTheSendQueueAndTheReceiveStore sends in-order
// data over an in-memory link as plain segments, as GSO packets a link cuts
// into MTU frames (TSO), and as GSO packets passed on whole (GRO
// aggregates), in writes of odd sizes so that payloads straddle the send
// queue's chunks and aggregates span several views. Every payload byte on
// the link lies in the sender's queue, and every byte the receiver holds
// lies in a payload the link carried.
func TestNoByteIsCopiedBetweenTheSendQueueAndTheReceiveStore(t *testing.T) {
	for _, c := range linkModes {
		t.Run(c.name, func(t *testing.T) {
			const n = 1 << 20
			la, lb := pipe.New("", "", 1500)
			log := &copyLog{LinkEndpoint: la}
			defer log.release()
			a := c.over(t, log)
			cli, srv := pipeConn(t, a, lb, func(ep tcpip.Endpoint) {
				log.mu.Lock()
				log.src = ep
				log.mu.Unlock()
			})
			want := pattern(0, n)
			got := make([]byte, 0, n)
			stored, copied, views := 0, 0, 0
			for written := 0; len(got) < n; {
				// Write until the send queue is full (the receiver's window
				// shut while it holds what it has not read), in writes of
				// odd sizes, each a chunk of its own: payloads straddle
				// chunks and, once the reader opens the window, a GSO
				// packet spans many.
				for written < n {
					var r bytes.Reader
					r.Reset(want[written:min(written+3000+written%2000, n)])
					m, err := cli.Write(&r, tcpip.WriteOptions{})
					if _, full := err.(*tcpip.ErrWouldBlock); err != nil && !full {
						t.Fatalf("write at %d: %v", written, err)
					}
					if m == 0 {
						break
					}
					written += int(m)
				}
				deadline := time.Now().Add(10 * time.Second)
				for tcp.RcvQueueLen(srv) == 0 {
					if time.Now().After(deadline) {
						t.Fatalf("%d of %d bytes arrived", len(got), n)
					}
					time.Sleep(time.Millisecond)
				}
				// Every byte is held here once before it is read: the read
				// takes no more than was inspected, so bytes that arrive in
				// between (a timer's send) wait for the next inspection.
				// The payloads are taken after the queue: each packet whose
				// bytes the queue holds was logged before it was delivered,
				// so it is among them; taken before, they would miss a
				// packet sent in between (by a timer, or on an ACK) and
				// count its bytes as copies, as under -race they did.
				held := tcp.RcvQueueSlices(srv)
				sent := log.payloadSlices()
				inspected := 0
				for _, b := range held {
					views++
					inspected += len(b)
					if !withinAny(b, sent) {
						copied += len(b)
					}
				}
				stored += inspected
				w := tcpip.SliceWriter(got[len(got) : len(got)+inspected])
				res, err := srv.Read(&w, tcpip.ReadOptions{})
				if err != nil {
					t.Fatal(err)
				}
				got = got[:len(got)+res.Count]
			}
			if !bytes.Equal(want, got) {
				t.Fatal("the bytes read are not those written")
			}
			log.mu.Lock()
			t.Logf("%d packets (%d acknowledged before the link saw them), %d payload views, %d bytes sent; %d views read by the receiver",
				log.packets, log.stale, log.views, log.sent, views)
			if log.copied != 0 {
				t.Errorf("%d of %d bytes on the link were copies of the send queue's, want 0", log.copied, log.sent)
			}
			if log.views <= log.packets {
				t.Errorf("%d views in %d packets: no payload spanned views", log.views, log.packets)
			}
			log.mu.Unlock()
			if copied != 0 || stored != n {
				t.Errorf("%d of the %d bytes the receiver read were copied from the link's views, want 0 of %d", copied, stored, n)
			}
			cli.Close()
			srv.Close()
		})
	}
}

// pipeConn connects an endpoint on a stack over la to one listening on a
// stack over lb; connected, if not nil, learns the client's endpoint before
// it sends data.
func pipeConn(t *testing.T, la, lb gstack.LinkEndpoint, connected func(tcpip.Endpoint)) (cli, srv tcpip.Endpoint) {
	t.Helper()
	pa, pb := netip.MustParsePrefix("10.9.0.1/24"), netip.MustParsePrefix("10.9.0.2/24")
	sa, err := stack.New(stack.Options{NICs: []stack.NIC{{Link: la, Addr: pa}}})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := stack.New(stack.Options{NICs: []stack.NIC{{Link: lb, Addr: pb}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sa.Close(); sb.Close() })
	var lwq, cwq waiter.Queue
	l, e := sb.Gvisor().NewEndpoint(tcp.ProtocolNumber, ipv4.ProtocolNumber, &lwq)
	if e != nil {
		t.Fatal(e)
	}
	t.Cleanup(l.Close)
	if e := l.Bind(tcpip.FullAddress{Port: 5203}); e != nil {
		t.Fatal(e)
	}
	if e := l.Listen(1); e != nil {
		t.Fatal(e)
	}
	cli, e = sa.Gvisor().NewEndpoint(tcp.ProtocolNumber, ipv4.ProtocolNumber, &cwq)
	if e != nil {
		t.Fatal(e)
	}
	if connected != nil {
		connected(cli)
	}
	if e := cli.Connect(tcpip.FullAddress{Addr: tcpip.AddrFromSlice(pb.Addr().AsSlice()), Port: 5203}); e != nil {
		if _, ok := e.(*tcpip.ErrConnectStarted); !ok {
			t.Fatal(e)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for srv == nil || cli.Readiness(waiter.WritableEvents) == 0 {
		if srv == nil {
			srv, _, _ = l.Accept(nil)
		}
		if time.Now().After(deadline) {
			t.Fatal("no connection")
		}
		time.Sleep(time.Millisecond)
	}
	return cli, srv
}
