package tcp_test

import (
	"bytes"
	"fmt"
	"math/rand"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/header/parse"
	"gvisor.dev/gvisor/pkg/tcpip/link/pipe"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	gstack "gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netramp/netramp/stack/tcptest"
	"github.com/netramp/netramp/tcp"
)

// Issue 12: the steady send and receive paths allocate nothing per segment,
// in this package (pools and reused scratch instead) nor in gVisor's layers
// below it (see paths). Each test runs one step many times; an allocation
// per step is at least one per run.

const allocRuns = 50

// parsed is s as a packet the network layer has parsed, ready for Deliver.
func parsed(s pseg) *gstack.PacketBuffer {
	b := tcptest.Frame(tcpip.AddrFromSlice(tcptest.PeerAddr.AsSlice()), tcpip.AddrFromSlice(tcptest.HostAddr.AsSlice()), s.seg())
	pkt := gstack.NewPacketBuffer(gstack.PacketBufferOptions{Payload: buffer.MakeWithData(b)})
	pkt.NetworkProtocolNumber = ipv4.ProtocolNumber
	if ok := parse.IPv4(pkt); !ok {
		panic("parsed: not IPv4")
	}
	if !parse.TCP(pkt) {
		panic("parsed: not TCP")
	}
	return pkt
}

// allocConn is an established connection with SACK, an RTT sample, and data
// queued to send.
func allocConn(t *testing.T) *conn {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	c.wndShift = 7
	c.sampleRTT(t, 10e6)
	c.write(t, make([]byte, 200<<10))
	return c
}

func TestBuildingASegmentAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own: run this test without -race")
	}
	c := allocConn(t)
	c.h.out()
	if n := testing.AllocsPerRun(allocRuns, func() { tcp.BuildSegment(c.ep) }); n != 0 {
		t.Fatalf("%v allocations per segment built, want 0", n)
	}
}

// A path is how a test's inbound segments reach the endpoint and what
// becomes of its answers.
type path struct {
	name string
	// prepare turns the peer's segments into packets, one use each.
	prepare func([]pseg) []*gstack.PacketBuffer
	// deliver hands the endpoint one and reports how many packets the host
	// wrote to its link in answer.
	deliver func(c *conn, pkt *gstack.PacketBuffer) int
}

// paths: this package alone (export_test.go's hooks: parsed packets in,
// answers released unwritten), and the whole stack below it: each segment
// enters at the link as an IPv4 frame (gVisor's NIC, IPv4 and
// demultiplexer, then HandlePacket), and the answers leave through
// gVisor's IPv4 (DF set: no IP ID drawn) and the NIC's queueing
// discipline to the link, where the test takes them.
var paths = []path{
	{"package", func(segs []pseg) []*gstack.PacketBuffer {
		pkts := make([]*gstack.PacketBuffer, len(segs))
		for i, s := range segs {
			pkts[i] = parsed(s)
		}
		return pkts
	}, func(c *conn, pkt *gstack.PacketBuffer) int {
		tcp.Deliver(c.ep, pkt)
		return 0
	}},
	{"through-the-stack", frames, viaLink(false)},
	// As through the stack, each segment a burst of its own (nic.Bursts):
	// the every-second ACK is held and the burst's end sends it.
	{"in-bursts", frames, viaLink(true)},
}

// frames makes each segment an IPv4 frame from the peer.
func frames(segs []pseg) []*gstack.PacketBuffer {
	pkts := make([]*gstack.PacketBuffer, len(segs))
	for i, s := range segs {
		b := tcptest.Frame(tcpip.AddrFromSlice(tcptest.PeerAddr.AsSlice()), tcpip.AddrFromSlice(tcptest.HostAddr.AsSlice()), s.seg())
		pkts[i] = gstack.NewPacketBuffer(gstack.PacketBufferOptions{Payload: buffer.MakeWithData(b)})
	}
	return pkts
}

// viaLink delivers a frame at the link, as one burst when burst is set, and
// takes what the host wrote.
func viaLink(burst bool) func(c *conn, pkt *gstack.PacketBuffer) int {
	return func(c *conn, pkt *gstack.PacketBuffer) int {
		if burst {
			c.h.link.BeginBurst()
		}
		c.h.link.InjectInbound(ipv4.ProtocolNumber, pkt)
		if burst {
			c.h.link.EndBurst()
		}
		n := 0
		for out := c.h.link.Read(); out != nil; out = c.h.link.Read() {
			out.DecRef()
			n++
		}
		return n
	}
}

// Each ACK acknowledges one more segment and SACKs the one after the next,
// so one hole always stands: the steady state of a lossy transfer, with
// SACK scoreboard, RACK and new data sent on every ACK.
func TestProcessingAnAckWithSACKAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own: run this test without -race")
	}
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			c := allocConn(t)
			var flight []pseg
			for _, s := range c.h.out() {
				if len(s.payload) > 0 {
					flight = append(flight, s)
				}
			}
			if len(flight) < 4 || flight[0].seq != c.hostNxt {
				t.Fatalf("%d segments in flight from %d, want at least 4 from %d", len(flight), flight[0].seq, c.hostNxt)
			}
			mss := uint32(len(flight[0].payload))
			segs := make([]pseg, allocRuns+1)
			for i := range segs {
				ack := c.hostNxt + uint32(i)*mss
				segs[i] = pseg{srcPort: peerPort, dstPort: c.port, seq: c.peerNxt, ack: ack, flags: header.TCPFlagAck,
					wnd: 65535, opts: sackOption(ack+mss, ack+2*mss)}
			}
			acks := p.prepare(segs)
			sent, bad := c.h.count("tcp.sent.bytes"), c.h.count("tcp.drops.bad-sack")
			i, out := 0, 0
			n := testing.AllocsPerRun(allocRuns, func() {
				out += p.deliver(c, acks[i])
				i++
			})
			if n != 0 {
				t.Fatalf("%v allocations per ACK, want 0", n)
			}
			// The ACKs did what the test claims: new data went out on
			// each (through the stack: onto the link), and every SACK
			// block was taken.
			if got := c.h.count("tcp.sent.bytes") - sent; got < uint64(allocRuns)*uint64(mss) {
				t.Fatalf("%d bytes sent during %d ACKs of %d bytes", got, allocRuns, mss)
			}
			if p.name != "package" && out < allocRuns {
				t.Fatalf("%d segments written during %d ACKs", out, allocRuns+1)
			}
			if c.h.count("tcp.drops.bad-sack") != bad {
				t.Fatal("SACK blocks refused")
			}
			for _, pkt := range acks {
				pkt.DecRef()
			}
		})
	}
}

// In-order full segments, each taken into the receive queue (kept as the
// link's view, not copied), ACKed every second one, and read by the
// application, which keeps up: the steady state of a bulk receiver.
func TestReceivingAnInOrderSegmentAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own: run this test without -race")
	}
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			h := newSegHarness(t, tcp.Options{})
			c := h.accept(80, synOptions(1460, 7, true, true, 5000))
			const size = 1448
			segs := make([]pseg, allocRuns+1)
			for i := range segs {
				segs[i] = pseg{srcPort: peerPort, dstPort: c.port, seq: c.peerNxt + uint32(i*size), ack: c.hostNxt,
					flags: header.TCPFlagAck, wnd: 65535, opts: tsOption(c.peerTS+uint32(i)+1, c.hostTS), payload: pattern(i*size, size)}
			}
			pkts := p.prepare(segs)
			buf := make([]byte, 2*size)
			got := make([]byte, 0, len(segs)*size)
			var w tcpip.SliceWriter
			i, acks := 0, 0
			n := testing.AllocsPerRun(allocRuns, func() {
				acks += p.deliver(c, pkts[i])
				i++
				w = tcpip.SliceWriter(buf)
				res, _ := c.ep.Read(&w, tcpip.ReadOptions{})
				got = append(got, buf[:res.Count]...)
			})
			if n != 0 {
				t.Fatalf("%v allocations per segment received, want 0", n)
			}
			if !bytes.Equal(got, pattern(0, (allocRuns+1)*size)) {
				t.Fatalf("read %d bytes, not the %d sent", len(got), (allocRuns+1)*size)
			}
			if p.name != "package" && acks < allocRuns/2 {
				t.Fatalf("%d ACKs written for %d segments", acks, allocRuns+1)
			}
			if n := c.h.count("tcp.acks.sent.burst-end"); p.name == "in-bursts" && n < allocRuns/2 {
				t.Fatalf("%d ACKs sent at a burst's end for %d segments: the hold was not exercised", n, allocRuns+1)
			}
			for _, pkt := range pkts {
				pkt.DecRef()
			}
		})
	}
}

func pattern(off, n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte((off + i) * 7)
	}
	return p
}

// The allocation-free option parser reads what gVisor's parser reads, on
// well-formed option lists and on random bytes.
func TestOptionParserAgreesWithGVisors(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	cases := [][]byte{
		sackOption(100, 200),
		append(tsOption(1, 2), sackOption(100, 200)...),
		tsOption(7, 9),
		{1, 1, 5, 18, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4},
		{5, 2}, {5, 3, 0}, {8, 10, 1}, {8, 9, 0, 0, 0, 0, 0, 0, 0}, {0, 8, 10}, {9, 1, 8, 10},
	}
	for range 20000 {
		b := make([]byte, r.Intn(41))
		for i := range b {
			b[i] = byte(r.Intn(12)) // mostly option kinds and small lengths
		}
		cases = append(cases, b)
	}
	for _, b := range cases {
		got, want := tcp.ParseOptions(b), header.ParseTCPOptions(b)
		if got.TS != want.TS || got.TSVal != want.TSVal || got.TSEcr != want.TSEcr ||
			len(got.SACKBlocks) != len(want.SACKBlocks) || (got.SACKBlocks == nil) != (want.SACKBlocks == nil) {
			t.Fatalf("% x: got %+v, want %+v", b, got, want)
		}
		for i := range got.SACKBlocks {
			if got.SACKBlocks[i] != want.SACKBlocks[i] {
				t.Fatalf("% x: block %d: got %+v, want %+v", b, i, got.SACKBlocks[i], want.SACKBlocks[i])
			}
		}
	}
}

// BenchmarkInboundChecksum checks a full segment's checksum as parse does
// ("sum-in-place") and as it did before, copying the addresses out for
// header.TCPValid ("addresses").
func BenchmarkInboundChecksum(b *testing.B) {
	pkt := parsed(pseg{srcPort: peerPort, dstPort: 80, seq: 1, ack: 1, flags: header.TCPFlagAck, wnd: 100, payload: pattern(0, 1448)})
	defer pkt.DecRef()
	b.Run("sum-in-place", func(b *testing.B) {
		for b.Loop() {
			if !tcp.ChecksumValid(pkt) {
				b.Fatal("invalid")
			}
		}
	})
	b.Run("addresses", func(b *testing.B) {
		for b.Loop() {
			h := header.IPv4(pkt.NetworkHeader().Slice())
			hdr := header.TCP(pkt.TransportHeader().Slice())
			_, ok, _ := header.TCPValid(hdr, func() uint16 { return pkt.Data().Checksum() }, uint16(pkt.Data().Size()), h.SourceAddress(), h.DestinationAddress(), false)
			if !ok {
				b.Fatal("invalid")
			}
		}
	})
}

// A bulk transfer between two stacks over an in-memory link, with the
// sender's GSO packets cut into MTU frames (TSO) or passed on whole (GRO
// aggregates), allocates nothing per segment on either side: gVisor's IP
// layers and the links included, the gonet adapter left out (the test
// writes and reads the endpoints directly, with a reader and a writer
// reused). The writer keeps the send queue full, so each write adds the few
// kilobytes an ACK freed as a chunk of its own and an aggregate spans many.
func TestBulkTransferOverGSOLinksAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own: run this test without -race")
	}
	for _, c := range linkModes {
		t.Run(c.name, func(t *testing.T) {
			la, lb := pipe.New("", "", 1500)
			count := &packetCount{LinkEndpoint: la}
			a := c.over(t, count)
			cli, srv := pipeConn(t, a, lb, nil)
			src, dst := pattern(0, 1<<20), make([]byte, 8<<10)
			var r bytes.Reader
			var w tcpip.SliceWriter
			var bad error
			moved, waits := 0, 0
			step := func() { // fill the send queue, read 8 KB
				if r.Len() == 0 {
					r.Reset(src)
				}
				if _, err := cli.Write(&r, tcpip.WriteOptions{}); err != nil {
					if _, full := err.(*tcpip.ErrWouldBlock); !full && bad == nil {
						bad = fmt.Errorf("write: %v", err)
					}
				}
				w = tcpip.SliceWriter(dst)
				res, err := srv.Read(&w, tcpip.ReadOptions{})
				if _, empty := err.(*tcpip.ErrWouldBlock); empty {
					waits++ // nothing to read: a timer (real time) must move it
					time.Sleep(100 * time.Microsecond)
				} else if err != nil && bad == nil {
					bad = fmt.Errorf("read: %v", err)
				}
				moved += res.Count
			}
			// One P throughout: changing GOMAXPROCS empties sync.Pools.
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
			// Past slow start and most of the buffers' growth: a window
			// update opens a sixteenth of the buffer (updateStep), so the
			// bursts it releases, and the pools' working set with them,
			// grow with the autotuned buffer.
			for range 12000 {
				step()
			}
			// No collection while counting: one empties gVisor's buffer
			// pools (sync.Pool), and refilling them costs an allocation
			// per chunk and view the connection cycles through, once per
			// collection, however many segments pass between collections.
			defer debug.SetGCPercent(debug.SetGCPercent(-1))
			// Count over a window the receive buffer did not grow in:
			// autotuning measures the round trip in real time, so a
			// stalled step can still grow it late, and the bytes the
			// larger window lets in take pool chunks once (one per
			// segment's worth of growth: 1.9 MB of it cost 1,400
			// allocations). That is the pools' working set settling, not
			// a steady cost per segment.
			var p0, v0 int64
			var m0, w0 int
			var before, after runtime.MemStats
			tries := 0
			for ; ; tries++ {
				buf := tcp.RcvBuf(srv)
				p0, v0, m0, w0 = count.packets.Load(), count.views.Load(), moved, waits
				runtime.ReadMemStats(&before)
				for range 4000 {
					step()
				}
				runtime.ReadMemStats(&after)
				if tcp.RcvBuf(srv) == buf {
					break
				}
				if tries == 9 {
					t.Fatalf("the receive buffer grew in each of %d windows of 4,000 reads (now %d bytes)", tries+1, tcp.RcvBuf(srv))
				}
			}
			if bad != nil {
				t.Fatal(bad)
			}
			allocs, packets, views := after.Mallocs-before.Mallocs, count.packets.Load()-p0, count.views.Load()-v0
			segs := uint64(moved-m0) / 1448 // full segments' worth, however packed
			t.Logf("%d allocations, %d packets with data (%d payload views), %d full segments, %d reads found nothing (window %d, buffer %d bytes)",
				allocs, packets, views, segs, waits-w0, tries+1, tcp.RcvBuf(srv))
			if packets < 100 {
				t.Fatalf("%d packets with data: the transfer stalled", packets)
			}
			// One per segment, packet or view would be thousands; one
			// per GRO aggregate, which carries some 34 segments since the
			// sender fills its GSO packets, hundreds.
			if allocs*20 > segs || int64(allocs)*10 > packets {
				t.Errorf("%d allocations for %d segments (%d packets), want under one per 20 segments and one per 10 packets", allocs, segs, packets)
			}
			if c.gro && views <= packets {
				t.Error("no aggregate spanned views")
			}
		})
	}
}

// packetCount counts the packets with data a link writes, and their
// payload views.
type packetCount struct {
	gstack.LinkEndpoint
	packets, views atomic.Int64
}

func (l *packetCount) WritePackets(pkts gstack.PacketBufferList) (int, tcpip.Error) {
	for _, pkt := range pkts.AsSlice() {
		if pkt.Data().Size() > 0 {
			l.packets.Add(1)
			vl, off := pkt.AsViewList()
			off += pkt.HeaderSize()
			for v := vl.Front(); v != nil; v = v.Next() {
				if off < v.Size() {
					l.views.Add(1)
				}
				off = max(off-v.Size(), 0)
			}
		}
	}
	return l.LinkEndpoint.WritePackets(pkts)
}
