package wire

import (
	"bytes"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netramp/netramp/counters"
	"github.com/netramp/netramp/stack/vclock"
)

// tsSeg is one TCP segment for the merge tests: seq, payload length,
// flags, and a timestamp option with TSval tsval (the option block 12 bytes,
// NOP NOP TS, as netramp's TCP sends it).
type tsSeg struct {
	seq     uint32
	n       int
	flags   header.TCPFlags
	tsval   uint32
	ack     uint32
	win     uint16
	srcPort uint16
}

func (s tsSeg) build() []byte {
	if s.flags == 0 {
		s.flags = header.TCPFlagAck
	}
	if s.ack == 0 {
		s.ack = 7
	}
	if s.win == 0 {
		s.win = 1000
	}
	if s.srcPort == 0 {
		s.srcPort = 1000
	}
	const thl = header.TCPMinimumSize + 12
	tl := header.IPv4MinimumSize + thl + s.n
	b := make([]byte, tl)
	ip := header.IPv4(b)
	ip.Encode(&header.IPv4Fields{
		TotalLength: uint16(tl), ID: uint16(s.seq), TTL: 64, Flags: header.IPv4FlagDontFragment,
		Protocol: uint8(header.TCPProtocolNumber), SrcAddr: addrA, DstAddr: addrB,
	})
	ip.SetChecksum(^ip.CalculateChecksum())
	t := header.TCP(b[header.IPv4MinimumSize:])
	t.Encode(&header.TCPFields{
		SrcPort: s.srcPort, DstPort: 2000, SeqNum: s.seq, AckNum: s.ack,
		DataOffset: thl, Flags: s.flags, WindowSize: s.win,
	})
	header.EncodeTSOption(s.tsval, 99, b[header.IPv4MinimumSize+header.TCPMinimumSize+2:])
	b[header.IPv4MinimumSize+header.TCPMinimumSize] = header.TCPOptionNOP
	b[header.IPv4MinimumSize+header.TCPMinimumSize+1] = header.TCPOptionNOP
	for i := range s.n {
		b[header.IPv4MinimumSize+thl+i] = byte(s.seq + uint32(i))
	}
	xsum := header.PseudoHeaderChecksum(header.TCPProtocolNumber, addrA, addrB, uint16(thl+s.n))
	t.SetChecksum(^checksum.Checksum(b[header.IPv4MinimumSize:], xsum))
	return b
}

// run is n in-order full segments of 1000 bytes from seq 1, TSval 5.
func run(n int) []tsSeg {
	var out []tsSeg
	for i := range n {
		out = append(out, tsSeg{seq: 1 + uint32(i*1000), n: 1000, tsval: 5, flags: header.TCPFlagAck})
	}
	return out
}

// merged is a packet as the merge handed it over: the sequence range it
// covers and whether it is an aggregate.
type merged struct {
	seq  uint32
	n    int
	agg  bool
	psh  bool
	good bool // checksums valid, IP length the packet's
}

func describe(p groPacket) merged {
	ip := header.IPv4(p.b)
	t := header.TCP(p.b[ip.HeaderLength():])
	n := len(p.b) - int(ip.HeaderLength()) - int(t.DataOffset())
	return merged{seq: t.SequenceNumber(), n: n, agg: p.agg, psh: t.Flags()&header.TCPFlagPsh != 0, good: checksumsValid(p.b)}
}

func mergeSegs(t *testing.T, segs []tsSeg, maxBytes int, mergePSH bool) ([]merged, [][]byte, groStats) {
	t.Helper()
	var frames, before [][]byte
	for _, s := range segs {
		f := s.build()
		frames = append(frames, f)
		before = append(before, append([]byte(nil), f...))
	}
	out, st := groMerge(frames, &GRO{MaxBytes: maxBytes, MergePSH: mergePSH}, func(n int) []byte { return make([]byte, n) }, nil)
	for i := range frames {
		if !bytes.Equal(frames[i], before[i]) {
			t.Fatalf("frame %d was changed by the merge", i)
		}
	}
	var got []merged
	var pkts [][]byte
	for _, p := range out {
		got = append(got, describe(p))
		pkts = append(pkts, p.b)
	}
	return got, pkts, st
}

// TestGROMergeRules: in-order segments of one flow with the same headers
// merge; a gap, a flag, an option (timestamp), an ACK number, a window or a
// flow difference ends the aggregate; PSH and a short segment join and end
// it; MaxBytes bounds it; the order of what arrived is kept.
func TestGROMergeRules(t *testing.T) {
	const hdr = header.IPv4MinimumSize + header.TCPMinimumSize + 12
	// at changes segment i, from changes segment i and those after it.
	at := func(segs []tsSeg, i int, f func(*tsSeg)) []tsSeg {
		segs = append([]tsSeg(nil), segs...)
		f(&segs[i])
		return segs
	}
	from := func(segs []tsSeg, i int, f func(*tsSeg)) []tsSeg {
		segs = append([]tsSeg(nil), segs...)
		for j := i; j < len(segs); j++ {
			f(&segs[j])
		}
		return segs
	}
	agg := func(seq uint32, n int) merged { return merged{seq: seq, n: n, agg: true, good: true} }
	one := func(seq uint32, n int) merged { return merged{seq: seq, n: n, good: true} }
	for _, c := range []struct {
		name     string
		segs     []tsSeg
		maxBytes int
		want     []merged
		mergePSH bool
	}{
		{"in order", run(4), 0, []merged{agg(1, 4000)}, false},
		{"a gap", from(run(4), 2, func(s *tsSeg) { s.seq += 1000 }), 0, []merged{agg(1, 2000), agg(3001, 2000)}, false},
		{"a duplicate", from(run(4), 2, func(s *tsSeg) { s.seq -= 1000 }), 0, []merged{agg(1, 2000), agg(1001, 2000)}, false},
		{"a FIN", at(run(4), 2, func(s *tsSeg) { s.flags |= header.TCPFlagFin }), 0,
			[]merged{agg(1, 2000), one(2001, 1000), one(3001, 1000)}, false},
		{"CWR", at(run(4), 1, func(s *tsSeg) { s.flags |= header.TCPFlagCwr }), 0,
			[]merged{one(1, 1000), one(1001, 1000), agg(2001, 2000)}, false},
		{"a later timestamp", from(run(4), 2, func(s *tsSeg) { s.tsval++ }), 0, []merged{agg(1, 2000), agg(2001, 2000)}, false},
		{"another ACK number", from(run(4), 1, func(s *tsSeg) { s.ack++ }), 0, []merged{one(1, 1000), agg(1001, 3000)}, false},
		{"another window", from(run(4), 3, func(s *tsSeg) { s.win++ }), 0, []merged{agg(1, 3000), one(3001, 1000)}, false},
		{"another flow", from(run(4), 1, func(s *tsSeg) { s.srcPort++ }), 0, []merged{one(1, 1000), agg(1001, 3000)}, false},
		{"PSH joins and ends", at(run(4), 1, func(s *tsSeg) { s.flags |= header.TCPFlagPsh }), 0,
			[]merged{{seq: 1, n: 2000, agg: true, psh: true, good: true}, agg(2001, 2000)}, false},
		{"PSH on every segment", from(run(4), 0, func(s *tsSeg) { s.flags |= header.TCPFlagPsh }), 0,
			[]merged{{seq: 1, n: 1000, psh: true, good: true}, {seq: 1001, n: 1000, psh: true, good: true},
				{seq: 2001, n: 1000, psh: true, good: true}, {seq: 3001, n: 1000, psh: true, good: true}}, false},
		{"PSH on every segment, MergePSH", from(run(4), 0, func(s *tsSeg) { s.flags |= header.TCPFlagPsh }), 0,
			[]merged{{seq: 1, n: 4000, agg: true, psh: true, good: true}}, true},
		{"PSH in the middle, MergePSH", at(run(4), 1, func(s *tsSeg) { s.flags |= header.TCPFlagPsh }), 0,
			[]merged{agg(1, 4000)}, true},
		{"a short segment joins and ends", at(run(4), 1, func(s *tsSeg) { s.n = 500 }), 0,
			[]merged{agg(1, 1500), agg(2001, 2000)}, false},
		{"a larger segment starts anew", []tsSeg{{seq: 1, n: 1000, tsval: 5}, {seq: 1001, n: 1200, tsval: 5}, {seq: 2201, n: 1200, tsval: 5}}, 0,
			[]merged{one(1, 1000), agg(1001, 2400)}, false},
		{"MaxBytes", run(7), hdr + 3000, []merged{agg(1, 3000), agg(3001, 3000), one(6001, 1000)}, false},
		{"a lone segment passes untouched", run(1), 0, []merged{one(1, 1000)}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			mb := c.maxBytes
			if mb == 0 {
				mb = maxGROBytes
			}
			got, _, st := mergeSegs(t, c.segs, mb, c.mergePSH)
			if len(got) != len(c.want) {
				t.Fatalf("packets %+v, want %+v", got, c.want)
			}
			aggs, frames := 0, 0
			for i := range got {
				if got[i] != c.want[i] {
					t.Fatalf("packets %+v, want %+v", got, c.want)
				}
				if got[i].agg {
					aggs++
					frames += got[i].n / 1000
				}
			}
			if st.aggregates != aggs {
				t.Errorf("counted %d aggregates, handed over %d", st.aggregates, aggs)
			}
		})
	}
}

// TestGROAggregateIsTheSegmentsJoined: an aggregate is the first segment's
// headers and every segment's payload in order, with an IP length and a TCP
// checksum that cover it all, and the IPv4 ID of the first.
func TestGROAggregateIsTheSegmentsJoined(t *testing.T) {
	segs := run(45)
	got, pkts, st := mergeSegs(t, segs, maxGROBytes, false)
	if len(got) != 1 || !got[0].agg || !got[0].good || st.merged != 45 {
		t.Fatalf("packets %+v, stats %+v: want one valid aggregate of 45 frames", got, st)
	}
	first := segs[0].build()
	const hdr = header.IPv4MinimumSize + header.TCPMinimumSize + 12
	want := append([]byte(nil), first[:hdr]...)
	for _, s := range segs {
		want = append(want, s.build()[hdr:]...)
	}
	p := pkts[0]
	if len(p) != len(want) || !bytes.Equal(p[hdr:], want[hdr:]) {
		t.Fatalf("aggregate of %d bytes, want %d: the payloads joined in order", len(p), len(want))
	}
	if header.IPv4(p).ID() != header.IPv4(first).ID() || !bytes.Equal(p[header.IPv4MinimumSize:][:16], first[header.IPv4MinimumSize:][:16]) {
		t.Errorf("aggregate headers differ from the first segment's")
	}
}

// TestGROPassesMalformedAndCorruptFramesUntouched: a frame GRO cannot read
// (truncated, IP options, a bad TCP checksum) ends the aggregate under way
// and is handed over as it arrived, in its place: merged, a corrupted
// frame's bytes would get a valid checksum.
func TestGROPassesMalformedAndCorruptFramesUntouched(t *testing.T) {
	for _, c := range []struct {
		name  string
		spoil func([]byte) []byte
	}{
		{"corrupt payload", func(b []byte) []byte { b[len(b)-1] ^= 0xff; return b }},
		{"bad IP checksum", func(b []byte) []byte { b[10] ^= 0xff; return b }},
		{"truncated", func(b []byte) []byte { return b[:30] }},
		{"IP length short of the frame", func(b []byte) []byte { return append(b, 0) }},
		{"not TCP", func(b []byte) []byte { b[9] = 17; return b }},
		{"one byte", func(b []byte) []byte { return b[:1] }},
	} {
		t.Run(c.name, func(t *testing.T) {
			var frames [][]byte
			for _, s := range run(5) {
				frames = append(frames, s.build())
			}
			frames[2] = c.spoil(frames[2])
			bad := append([]byte(nil), frames[2]...)
			out, st := groMerge(frames, &GRO{}, func(n int) []byte { return make([]byte, n) }, nil)
			if len(out) != 3 || st.aggregates != 2 || !bytes.Equal(out[1].b, bad) || out[1].agg {
				t.Fatalf("%d packets, %+v: want an aggregate, the spoilt frame as it was, an aggregate", len(out), st)
			}
			if d := describe(out[0]); d.seq != 1 || d.n != 2000 || !d.good {
				t.Errorf("first aggregate %+v", d)
			}
			if d := describe(out[2]); d.seq != 3001 || d.n != 2000 || !d.good {
				t.Errorf("last aggregate %+v", d)
			}
		})
	}
}

// burstSink records a dispatcher's bursts: the packets each one brought.
type burstSink struct {
	clk    *vclock.Clock
	open   bool
	bursts [][]rx
	loose  []rx // delivered outside any burst
}

func (s *burstSink) BeginBurst() { s.open = true; s.bursts = append(s.bursts, nil) }
func (s *burstSink) EndBurst()   { s.open = false }
func (s *burstSink) DeliverNetworkPacket(p tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) {
	v := pkt.ToView()
	r := rx{at: s.clk.Elapsed(), proto: p, b: append([]byte(nil), v.AsSlice()...)}
	v.Release()
	if s.open {
		s.bursts[len(s.bursts)-1] = append(s.bursts[len(s.bursts)-1], r)
	} else {
		s.loose = append(s.loose, r)
	}
}
func (*burstSink) DeliverLinkPacket(tcpip.NetworkProtocolNumber, *stack.PacketBuffer) {}

// TestGROPollHandsOverWhatArrivedAsOneBurst: frames arriving within Poll of
// the one that raised the interrupt reach the stack at the poll, merged, as
// one burst; Budget bounds a poll's frames and the rest follow at once;
// NoMerge and NoBurst hand the same frames over at the same instants, one by
// one; the counters say what happened.
func TestGROPollHandsOverWhatArrivedAsOneBurst(t *testing.T) {
	const poll = 950 * time.Microsecond
	type want struct {
		bursts [][]int // per burst, the frames each packet holds
		loose  int
		at     []time.Duration
	}
	for _, c := range []struct {
		name string
		gro  GRO
		want want
	}{
		// 20 frames 100 µs apart: the frame at 0 raises the interrupt and the
		// poll at 950 µs takes 10; the one at 1 ms raises it again.
		{"merged", GRO{Poll: poll}, want{bursts: [][]int{{10}, {10}}, at: []time.Duration{poll, time.Millisecond + poll}}},
		{"aggregates of 4000", GRO{Poll: poll, MaxBytes: 4000 + 52}, want{bursts: [][]int{{4, 4, 2}, {4, 4, 2}}}},
		{"budget 8", GRO{Poll: poll, Budget: 8}, want{bursts: [][]int{{8}, {2}, {8}, {2}},
			at: []time.Duration{poll, poll, time.Millisecond + poll, time.Millisecond + poll}}},
		{"no merge", GRO{Poll: poll, NoMerge: true}, want{bursts: [][]int{
			{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1}}}},
		{"no merge, no burst", GRO{Poll: poll, NoMerge: true, NoBurst: true}, want{loose: 20}},
	} {
		t.Run(c.name, func(t *testing.T) {
			clk := vclock.New(epoch)
			w, err := New(clk, Config{AtoB: Dir{GRO: c.gro}})
			if err != nil {
				t.Fatal(err)
			}
			s := &burstSink{clk: clk}
			w.B().Attach(s)
			reg := counters.NewRegistry()
			w.Counters(reg, "")
			r := &rig{clk: clk, w: w}
			var frames [][]byte
			for _, sg := range run(20) {
				frames = append(frames, sg.build())
			}
			r.sendEvery(t, w.A(), 100*time.Microsecond, frames)
			r.drain()
			var got [][]int
			var seq uint32 = 1
			for _, b := range s.bursts {
				var sizes []int
				for _, p := range b {
					d := describe(groPacket{b: p.b})
					if d.seq != seq || !d.good {
						t.Fatalf("packet %+v, want seq %d, valid", d, seq)
					}
					seq += uint32(d.n)
					sizes = append(sizes, d.n/1000)
				}
				got = append(got, sizes)
			}
			if len(got) != len(c.want.bursts) || len(s.loose) != c.want.loose {
				t.Fatalf("bursts %v and %d loose, want %v and %d", got, len(s.loose), c.want.bursts, c.want.loose)
			}
			for i := range got {
				if len(got[i]) != len(c.want.bursts[i]) {
					t.Fatalf("bursts %v, want %v", got, c.want.bursts)
				}
				for j := range got[i] {
					if got[i][j] != c.want.bursts[i][j] {
						t.Fatalf("bursts %v, want %v", got, c.want.bursts)
					}
				}
			}
			for i, at := range c.want.at {
				if s.bursts[i][0].at != at {
					t.Errorf("burst %d at %v, want %v", i, s.bursts[i][0].at, at)
				}
			}
			if c.want.loose > 0 && s.loose[9].at != poll {
				t.Errorf("unmerged frame 9 at %v, want the poll's %v", s.loose[10].at, poll)
			}
			ab, _ := w.Stats()
			aggs, merged := uint64(0), uint64(0)
			several := uint64(0)
			for _, b := range got {
				n := 0
				for _, k := range b {
					if k > 1 {
						aggs++
						merged += uint64(k)
						n++
					}
				}
				if n >= 2 {
					several++
				}
			}
			polls := uint64(len(got))
			if c.want.loose > 0 {
				polls = 2
			}
			if ab.DeliveredFrames != 20 || ab.GROAggregates != aggs || ab.GROFramesMerged != merged ||
				ab.GROPolls != polls || ab.GROPollsSeveral != several {
				t.Errorf("stats %+v: want 20 delivered, %d polls, %d aggregates of %d frames, %d with several",
					ab, polls, aggs, merged, several)
			}
			for name, want := range map[string]uint64{
				"gro.polls": ab.GROPolls, "gro.aggregates": ab.GROAggregates, "gro.frames.merged": ab.GROFramesMerged,
				"gro.polls.several-aggregates": ab.GROPollsSeveral, "gro.poll.high-water.aggregates": ab.GROPollHighAggregates,
			} {
				if got := reg.Lookup("nic.wire.a2b." + name).Load(); got != want {
					t.Errorf("nic.wire.a2b.%s = %d, want %d as in the stats", name, got, want)
				}
			}
		})
	}
}

func TestGROConfigIsChecked(t *testing.T) {
	clk := vclock.New(epoch)
	for _, g := range []GRO{{Poll: -1}, {Poll: 1, MaxBytes: 70000}, {Poll: 1, Budget: -1}, {MaxBytes: 100}, {NoMerge: true}} {
		if _, err := New(clk, Config{AtoB: Dir{GRO: g}}); err == nil {
			t.Errorf("GRO %+v accepted", g)
		}
	}
	if _, err := NewRealTime(Config{BtoA: Dir{GRO: GRO{Poll: time.Millisecond}}}); err == nil {
		t.Errorf("a real-time wire accepted GRO")
	}
	w, err := New(clk, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.SetDir(SideA, Dir{GRO: GRO{Poll: time.Millisecond}}); err == nil {
		t.Errorf("SetDir turned GRO on while the wire runs")
	}
}
