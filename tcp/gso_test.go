package tcp_test

import (
	"crypto/sha256"
	"slices"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	gstack "gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netramp/netramp/counters"
	"github.com/netramp/netramp/nic"
	"github.com/netramp/netramp/nic/gso"
	"github.com/netramp/netramp/stack/tcptest"
	"github.com/netramp/netramp/tcp"
)

// frameLog records the data frames a stack puts on its link: sequence
// number and payload length in order, and a hash of the payloads. drop, if
// set, decides per data frame (counted from 0, with its place among the data
// frames of one write: a GSO packet's frames arrive in one) whether the link
// loses it.
type frameLog struct {
	gstack.LinkEndpoint
	frames []loggedFrame
	sum    [32]byte
	bytes  []byte // every payload, in order, for the hash
	gsoIn  int    // packets that still carried GSO options: must stay 0
	drop   func(i, pos, of int) bool
	mtu    int
	over   int // frames longer than the MTU
}

type loggedFrame struct {
	seq uint32
	n   int
	psh bool
}

func (l *frameLog) TxCredit() nic.Credit {
	if cl, ok := l.LinkEndpoint.(nic.CreditLink); ok {
		return cl.TxCredit()
	}
	return nil
}

func (l *frameLog) WritePackets(pkts gstack.PacketBufferList) (int, tcpip.Error) {
	var keep gstack.PacketBufferList
	of := 0
	for _, pkt := range pkts.AsSlice() {
		if pkt.Data().Size() > 0 {
			of++
		}
	}
	pos := 0
	for _, pkt := range pkts.AsSlice() {
		if pkt.GSOOptions.Type != gstack.GSONone {
			l.gsoIn++
		}
		v := pkt.ToView()
		b := v.AsSlice()
		if len(b) > l.mtu {
			l.over++
		}
		ip := header.IPv4(b)
		t := header.TCP(ip.Payload())
		n := len(t.Payload())
		if n > 0 {
			i := len(l.frames)
			l.frames = append(l.frames, loggedFrame{seq: t.SequenceNumber(), n: n, psh: t.Flags()&header.TCPFlagPsh != 0})
			l.bytes = append(l.bytes, t.Payload()...)
			pos++
			if l.drop != nil && l.drop(i, pos-1, of) {
				v.Release()
				continue
			}
		}
		v.Release()
		keep.PushBack(pkt)
	}
	if keep.Len() > 0 {
		if _, err := l.LinkEndpoint.WritePackets(keep); err != nil {
			return 0, err
		}
	}
	return pkts.Len(), nil
}

// gsoRun is one bulk transfer from A with A's link logged, and, when
// offload, offering A host GSO of 64 KB and segmenting like a NIC.
func gsoTransfer(t *testing.T, offload bool, n int64, drop func(i, pos, of int) bool) (*frameLog, counters.Snapshot, counters.Snapshot) {
	t.Helper()
	log := &frameLog{drop: drop, mtu: 1500}
	lr := counters.NewRegistry()
	p := newVPairLink(t, lanCfg(), tcp.Options{}, tcp.Options{}, 5, func(ep gstack.LinkEndpoint) gstack.LinkEndpoint {
		log.LinkEndpoint = ep
		if !offload {
			return log
		}
		l, err := gso.NewLink(log, gso.LinkOptions{MaxSize: 64 << 10, Counters: lr})
		if err != nil {
			t.Fatal(err)
		}
		return l
	})
	p.transfer(t, n, 60*time.Second)
	log.sum = sha256.Sum256(log.bytes)
	if log.gsoIn != 0 || log.over != 0 {
		t.Errorf("%d GSO packets and %d frames over the MTU reached the wire", log.gsoIn, log.over)
	}
	return log, p.ra.Snapshot(), lr.Snapshot()
}

func TestGSOPutsTheSameSegmentsOnTheWire(t *testing.T) {
	const n = 4 << 20
	plain, ra, _ := gsoTransfer(t, false, n, nil)
	off, rg, _ := gsoTransfer(t, true, n, nil)
	if plain.sum != off.sum {
		t.Errorf("payload hash differs: %x without GSO, %x with", plain.sum[:8], off.sum[:8])
	}
	if !slices.Equal(plain.frames, off.frames) {
		i := 0
		for i < min(len(plain.frames), len(off.frames)) && plain.frames[i] == off.frames[i] {
			i++
		}
		t.Errorf("data frames differ from frame %d of %d/%d", i, len(plain.frames), len(off.frames))
	}
	for _, c := range []string{"tcp.segments.out", "tcp.sent.bytes", "tcp.retransmitted.bytes"} {
		if ra[c] != rg[c] {
			t.Errorf("%s: %d without GSO, %d with", c, ra[c], rg[c])
		}
	}
	// PSH only where the send buffer ran dry (push.go), which a bulk
	// writer seldom lets it: the segmenting link puts a GSO packet's PSH on
	// its last frame, so the frames above agree on it too.
	push := 0
	for _, f := range off.frames {
		if f.psh {
			push++
		}
	}
	if push == 0 || push > len(off.frames)/10 {
		t.Errorf("PSH on %d of %d data frames, want some, at most a tenth", push, len(off.frames))
	}
	t.Logf("%d data frames (%d with PSH), %d GSO packets", len(off.frames), push, rg["tcp.gso.packets"])
}

func TestSenderUsesGSOWhenTheLinkOffersIt(t *testing.T) {
	_, ra, lr := gsoTransfer(t, true, 4<<20, nil)
	pk, fr := lr["nic.gso.packets"], lr["nic.gso.frames"]
	if ra["tcp.gso.packets"] == 0 || pk == 0 {
		t.Fatalf("the sender wrote no GSO packet to a link offering GSO (tcp.gso.packets %d, nic.gso.packets %d)", ra["tcp.gso.packets"], pk)
	}
	// Most data must leave in runs: a sender that offered GSO on a stray
	// segment only would not cut the per-packet cost.
	if segs := ra["tcp.segments.out"]; fr*2 < segs {
		t.Errorf("only %d of %d segments left in GSO packets", fr, segs)
	}
	t.Logf("%d GSO packets, %.1f frames each", pk, float64(fr)/float64(pk))
}

func TestLossInsideAGSOBurstIsRepairedOneSegmentAtATime(t *testing.T) {
	lost := -1 // the first data frame past the 30th in the middle of a GSO packet
	log, ra, _ := gsoTransfer(t, true, 4<<20, func(i, pos, of int) bool {
		if lost < 0 && i >= 30 && pos > 0 && pos < of-1 {
			lost = i
		}
		return i == lost
	})
	if lost < 0 {
		t.Fatal("no GSO packet of three frames or more to lose one of")
	}
	f := log.frames[lost]
	var again []loggedFrame
	for _, g := range log.frames[lost+1:] {
		if g.seq == f.seq {
			again = append(again, g)
		}
	}
	if len(again) != 1 || again[0].n != f.n {
		t.Fatalf("lost frame seq %d (%d bytes) resent as %v, want once as one segment", f.seq, f.n, again)
	}
	if got := ra["tcp.retransmitted.bytes"]; got != uint64(f.n) {
		t.Errorf("retransmitted %d bytes, want the one lost segment's %d", got, f.n)
	}
	if ra["tcp.rto"] != 0 {
		t.Errorf("%d RTOs: the loss should be repaired by SACK/RACK", ra["tcp.rto"])
	}
}

// corkHarness is a scripted peer on a link that, with offload, offers the
// host GSO and takes its GSO packets whole, and without is a plain link;
// the peer acknowledges each data packet from inside the host's write of
// it, as a synchronous link does, and the packets the host sent are
// collected in data.
func corkHarness(t *testing.T, offload bool) (*segHarness, *conn, *[]pseg) {
	t.Helper()
	cfg := tcptest.Config{TCP: tcp.Options{InitialWindow: 100}}
	if offload {
		cfg.Wrap = func(l gstack.LinkEndpoint) gstack.LinkEndpoint {
			g, err := gso.NewLink(l, gso.LinkOptions{MaxSize: 64 << 10, GRO: true})
			if err != nil {
				t.Fatal(err)
			}
			return g
		}
	}
	hh := tcptest.NewConfig(t, cfg)
	h := &segHarness{host: hh, t: t, clk: hh.Clock, link: hh.Link, s: hh.Stack, reg: hh.Counters}
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	var data []pseg
	h.link.OnWrite = func() {
		for _, s := range h.out() {
			if len(s.payload) == 0 {
				continue
			}
			data = append(data, s)
			c.hostNxt = s.seq + uint32(len(s.payload))
			c.send(header.TCPFlagAck, nil)
		}
	}
	return h, c, &data
}

// TestWriteTailWaitsForTheNextWriteOnGSO: on a GSO link whose ACKs come back
// inside the host's write, a 64 KB write leaves as one GSO packet of 44 full
// segments and the 1,296 bytes past them wait (corkTail) instead of leaving
// as a runt; the next write sends them at the head of its own full packet,
// and once the writes stop the held bytes leave when the clock next runs.
func TestWriteTailWaitsForTheNextWriteOnGSO(t *testing.T) {
	h, c, data := corkHarness(t, true)
	const full = 44 * 1460 // the segments a 65,455-byte GSO payload holds
	start := c.hostNxt
	c.write(t, make([]byte, 64<<10))
	if len(*data) != 1 || len((*data)[0].payload) != full {
		t.Fatalf("first write sent %d data packets %v, want one of %d bytes", len(*data), sizes(*data), full)
	}
	c.write(t, make([]byte, 64<<10))
	if len(*data) != 2 || (*data)[1].seq != start+full || len((*data)[1].payload) != full {
		t.Fatalf("second write sent %v at %d, want one more packet of %d bytes at %d", sizes(*data), (*data)[len(*data)-1].seq-start, full, full)
	}
	h.clk.RunFor(time.Millisecond)
	if got := c.hostNxt - start; got != 2*64<<10 {
		t.Fatalf("%d of %d bytes sent once the clock ran (%v)", got, 2*64<<10, sizes(*data))
	}
}

// TestGSOPacketBuildsItsHeadersOnce: the full segments of one GSO packet
// share its headers, built for the first of them only (runExtend): two 64 KB
// writes leave as two packets of 44 segments, two headers built, not 88; the
// segments still count one by one (tcp.segments.out). The 2,592 bytes
// corkTail held leave as a full segment and a shorter one, which is built
// as before (runExtend takes only a full segment after a full one): two more.
func TestGSOPacketBuildsItsHeadersOnce(t *testing.T) {
	h, c, data := corkHarness(t, true)
	const full = 44 * 1460
	before := h.reg.Snapshot()["tcp.segments.out"]
	c.write(t, make([]byte, 64<<10))
	c.write(t, make([]byte, 64<<10))
	if len(*data) != 2 || len((*data)[0].payload) != full || len((*data)[1].payload) != full {
		t.Fatalf("two writes sent %v, want two packets of %d bytes", sizes(*data), full)
	}
	if got := tcp.HeadersBuilt(c.ep); got != 2 {
		t.Errorf("built headers for %d data segments of two GSO packets of 44, want 2", got)
	}
	if got := h.reg.Snapshot()["tcp.segments.out"] - before; got < 88 {
		t.Errorf("tcp.segments.out rose by %d, want at least the packets' 88 segments", got)
	}
	h.clk.RunFor(time.Millisecond)
	if got := tcp.HeadersBuilt(c.ep); got != 4 {
		t.Errorf("built headers for %d data segments once the tail left, want 4", got)
	}
}

// TestArmBComputesThePacingRateOnlyBeyondTheACKsCredit: arm B's pacer lets
// a segment the last ACK's credit covers leave at any rate, so the rate is
// computed only for the segments beyond it (paceWait): over TSO, where an
// ACK credits a GSO packet's worth, that is under one segment in two (about
// one in four on this path), where each segment computed it before.
func TestArmBComputesThePacingRateOnlyBeyondTheACKsCredit(t *testing.T) {
	p := newVPairLink(t, lanCfg(), tcp.Options{}, tcp.Options{}, 5, func(ep gstack.LinkEndpoint) gstack.LinkEndpoint {
		l, err := gso.NewLink(ep, gso.LinkOptions{MaxSize: 64 << 10})
		if err != nil {
			t.Fatal(err)
		}
		return l
	})
	cli, srv := p.dial(t, 5001)
	si := startSink(srv)
	startSource(cli, 3, 8<<20)
	if !p.clk.RunUntil(si.done, p.clk.Elapsed()+60*time.Second) {
		t.Fatal("transfer incomplete")
	}
	rates, segs := tcp.PaceRates(cli.ep), p.ra.Snapshot()["tcp.segments.out"]
	if rates == 0 || 2*rates >= segs {
		t.Errorf("the pacing rate was computed %d times for %d segments, want at least once and under once in two", rates, segs)
	}
	t.Logf("%d rate computations, %d segments", rates, segs)
}

func sizes(segs []pseg) []int {
	var n []int
	for _, s := range segs {
		n = append(n, len(s.payload))
	}
	return n
}

// TestLoneWriteLeavesAtOnceOnGSO: a write with no packet of ours ahead of it
// is not held for a next write (corkTail holds only behind a packet being
// sent), so a request's bytes leave inside its Write.
func TestLoneWriteLeavesAtOnceOnGSO(t *testing.T) {
	_, c, data := corkHarness(t, true)
	c.write(t, make([]byte, 100))
	if len(*data) != 1 || len((*data)[0].payload) != 100 {
		t.Fatalf("write of 100 bytes sent %v, want them at once", sizes(*data))
	}
}

// TestWriteTailWaitsForTheNextWriteWithoutGSO: on a plain link whose ACKs
// come back inside the host's write, a 64 KB write leaves as 44 full
// segments and the 1,296 bytes past them wait (corkTail) instead of leaving
// as a 45th, short segment, which the receiver would ACK at once; the next
// write sends them at the head of its own full segments, and once the
// writes stop the held bytes leave when the clock next runs.
func TestWriteTailWaitsForTheNextWriteWithoutGSO(t *testing.T) {
	h, c, data := corkHarness(t, false)
	start := c.hostNxt
	c.write(t, make([]byte, 64<<10))
	if n := len(*data); n != 44 || !allFull(*data, 1460) {
		t.Fatalf("first write sent %v, want 44 full segments", sizes(*data))
	}
	c.write(t, make([]byte, 64<<10))
	if n := len(*data); n != 89 || !allFull(*data, 1460) || (*data)[44].seq != start+44*1460 {
		t.Fatalf("second write sent %v, want 45 more full segments from the held tail", sizes((*data)[44:]))
	}
	h.clk.RunFor(time.Millisecond)
	if got := c.hostNxt - start; got != 2*64<<10 {
		t.Fatalf("%d of %d bytes sent once the clock ran (%v)", got, 2*64<<10, sizes((*data)[89:]))
	}
	if n := len(*data); n != 90 {
		t.Fatalf("%d segments for two 64 KB writes, want 90 (89 full and the last tail)", n)
	}
}

// TestWriteTailIsNotHeldWithoutGSO: the tail of a 64 KB write on the same
// plain link leaves inside the write when holding it could stall the
// application or the peer: with TCP_NODELAY, with a FIN queued behind it,
// and a write alone with no packet of ours ahead of it.
func TestWriteTailIsNotHeldWithoutGSO(t *testing.T) {
	for _, c := range []struct {
		name  string
		size  int
		setup func(c *conn)
		after func(c *conn)
		want  int // data segments sent with no clock run
	}{
		{"TCP_NODELAY", 64 << 10, func(c *conn) { c.ep.SocketOptions().SetDelayOption(false) }, nil, 45},
		{"FIN after the write", 64 << 10, nil, func(c *conn) { c.ep.Shutdown(tcpip.ShutdownWrite) }, 45},
		{"a lone short write", 100, nil, nil, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, cn, data := corkHarness(t, false)
			start := cn.hostNxt
			if c.setup != nil {
				c.setup(cn)
			}
			cn.write(t, make([]byte, c.size))
			if c.after != nil {
				c.after(cn)
			}
			if n := len(*data); n != c.want || cn.hostNxt-start != uint32(c.size) {
				t.Fatalf("sent %v (%d bytes), want %d segments of all %d bytes", sizes(*data), cn.hostNxt-start, c.want, c.size)
			}
		})
	}
}

func allFull(segs []pseg, mss int) bool {
	for _, s := range segs {
		if len(s.payload) != mss {
			return false
		}
	}
	return true
}
