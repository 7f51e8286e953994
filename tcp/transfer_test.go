package tcp_test

import (
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"

	"github.com/netramp/netramp/cc"
	"github.com/netramp/netramp/nic/wire"
	"github.com/netramp/netramp/tcp"
)

func TestOneMegabyteCrossesWireInVirtualTime(t *testing.T) {
	p := newVPair(t, lanCfg(), tcp.Options{}, tcp.Options{}, 1)
	d, _ := p.transfer(t, 1<<20, 30*time.Second)
	t.Logf("1 MB in %v virtual", d)
	if d > 200*time.Millisecond {
		t.Errorf("1 MB over 1 Gbit/s, 2 ms RTT took %v", d)
	}
}

func TestSixtyFourMegabytesCrossWireIntact(t *testing.T) {
	if testing.Short() {
		t.Skip("64 MB in virtual time")
	}
	p := newVPair(t, lanCfg(), tcp.Options{}, tcp.Options{}, 2)
	d, _ := p.transfer(t, 64<<20, 60*time.Second)
	t.Logf("64 MB in %v virtual (%.0f Mbit/s)\n%s", d, float64(64<<23)/d.Seconds()/1e6, p.ra.Snapshot())
}

func TestSameSeedGivesSameWireTrace(t *testing.T) {
	cfg := lanCfg()
	cfg.AtoB.Loss = 0.01
	run := func() ([32]byte, time.Duration) {
		p := newVPair(t, cfg, tcp.Options{}, tcp.Options{}, 7)
		d, h := p.transfer(t, 2<<20, 60*time.Second)
		return h, d
	}
	h1, d1 := run()
	h2, d2 := run()
	if h1 != h2 || d1 != d2 {
		t.Fatalf("two runs with seed 7 differ: %x/%v vs %x/%v", h1[:8], d1, h2[:8], d2)
	}
}

func TestTransferWorksWithEachOptionDeclined(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    tcp.Options
	}{
		{"no-sack", tcp.Options{NoSACK: true}},
		{"no-timestamps", tcp.Options{NoTimestamps: true}},
		{"no-window-scale", tcp.Options{NoWindowScale: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Only the receiver declines: the sender offers, and must cope.
			cfg := lanCfg()
			cfg.AtoB.Loss = 0.005
			p := newVPair(t, cfg, tcp.Options{}, tc.o, 3)
			d, _ := p.transfer(t, 4<<20, 120*time.Second)
			t.Logf("%s: 4 MB in %v", tc.name, d)
		})
	}
}

func TestTwoPercentLossStillDeliversEverything(t *testing.T) {
	cfg := lanCfg()
	cfg.AtoB.Loss = 0.02
	cfg.BtoA.Loss = 0.02
	p := newVPair(t, cfg, tcp.Options{}, tcp.Options{}, 4)
	d, _ := p.transfer(t, 8<<20, 300*time.Second)
	s := p.ra.Snapshot()
	t.Logf("8 MB at 2%% loss in %v: retransmitted %d, rto %d, recoveries %d, probes %d",
		d, s["tcp.retransmitted.bytes"], s["tcp.rto"], s["tcp.recoveries"], s["tcp.loss-probes"])
	if s["tcp.recoveries"] == 0 {
		t.Error("2% loss caused no SACK recovery")
	}
}

func TestT14PresetRunsCardLimitedWithoutRefusals(t *testing.T) {
	cfg, err := wire.Preset("t14")
	if err != nil {
		t.Fatal(err)
	}
	cfg.AtoB.TxRing = 16 // a small ring, so the card ends opportunities
	p := newVPair(t, cfg, tcp.Options{}, tcp.Options{}, 5)
	d, _ := p.transfer(t, 16<<20, 60*time.Second)
	s := p.ra.Snapshot()
	t.Logf("16 MB on t14 with a 16-slot ring in %v: card stops %d, refusals %d", d, s["tcp.card-stops"], s["tcp.card-refusals"])
	if s["tcp.card-stops"] == 0 {
		t.Error("a 16-slot TX ring never ended a send opportunity")
	}
	if s["tcp.card-refusals"] != 0 {
		t.Errorf("the sender wrote %d segments the card had no credit for", s["tcp.card-refusals"])
	}
}

// TestReceiveBufferAutotuningOpensTheWindowPastItsStart: the receive buffer
// starts at 128 KiB, which on 1 Gbit/s with 2 ms RTT caps a transfer at
// 64 MB/s (512 Mbit/s); autotuning grows it to what the reader drains per
// RTT, so 16 MB must go faster than the untuned window allows, with
// timestamps and without.
func TestReceiveBufferAutotuningOpensTheWindowPastItsStart(t *testing.T) {
	for _, ts := range []bool{true, false} {
		p := newVPair(t, lanCfg(), tcp.Options{}, tcp.Options{NoTimestamps: !ts}, 6)
		d, _ := p.transfer(t, 16<<20, 30*time.Second)
		rate := float64(16<<23) / d.Seconds() / 1e6
		t.Logf("timestamps %v: 16 MB in %v (%.0f Mbit/s)", ts, d, rate)
		if rate < 600 {
			t.Errorf("timestamps %v: %.0f Mbit/s, not above the 512 Mbit/s a 128 KiB window allows", ts, rate)
		}
	}
}

func TestPacedAndArmATransfersComplete(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    tcp.Options
	}{
		{"paced", tcp.Options{Pacing: true}},
		{"arm-a", tcp.Options{Arm: cc.ArmA}},
		{"stretch-ack", tcp.Options{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ob := tcp.Options{}
			if tc.name == "stretch-ack" {
				ob.StretchAck = 8
			}
			p := newVPair(t, lanCfg(), tc.o, ob, 8)
			d, _ := p.transfer(t, 8<<20, 30*time.Second)
			t.Logf("%s: 8 MB in %v", tc.name, d)
		})
	}
}

// TestPacingSpreadsTheWindow: unpaced, each ACK releases segments in one
// burst at one instant; paced, segments leave one by one at cc's pacing rate
// once an RTT is known (at most the pacer's two-segment burst at an instant).
func TestPacingSpreadsTheWindow(t *testing.T) {
	d := wire.Dir{RateBps: 10e9, Delay: 5 * time.Millisecond}
	cfg := wire.Config{AtoB: d, BtoA: d}
	run := func(pacing bool) int {
		p := newVPair(t, cfg, tcp.Options{Pacing: pacing}, tcp.Options{StretchAck: 8}, 9)
		burst := 0
		var last time.Duration
		run := 0
		p.w.SetTrace(func(ev wire.TraceEvent) {
			if ev.Kind != wire.TraceSend || ev.Dir != "a2b" || len(ev.Frame) < 1000 || ev.At < 50*time.Millisecond {
				return
			}
			if ev.At == last {
				run++
			} else {
				run, last = 1, ev.At
			}
			burst = max(burst, run)
		})
		p.transfer(t, 4<<20, 60*time.Second)
		return burst
	}
	unpaced, paced := run(false), run(true)
	t.Logf("largest burst at one instant after the first RTTs: unpaced %d, paced %d segments", unpaced, paced)
	if unpaced < 8 {
		t.Errorf("unpaced sender's largest burst is %d segments; the test needs stretch-ACK bursts", unpaced)
	}
	if paced > 2 {
		t.Errorf("paced sender sent %d segments at one instant", paced)
	}
}

// TestBlackoutRecoversByBackedOffRTOsWithoutGivingUp: five seconds with the
// path down in both directions; RTOs back off, no reset, and the transfer
// completes once the path returns.
func TestBlackoutRecoversByBackedOffRTOsWithoutGivingUp(t *testing.T) {
	c := lanCfg()
	c.AtoB.Blackouts = []wire.Window{{Start: 20 * time.Millisecond, End: 5020 * time.Millisecond}}
	c.BtoA.Blackouts = c.AtoB.Blackouts
	p := newVPair(t, c, tcp.Options{}, tcp.Options{}, 21)
	d, _ := p.transfer(t, 8<<20, 120*time.Second)
	s := p.ra.Snapshot()
	t.Logf("8 MB across a 5 s blackout in %v: %d RTOs", d, s["tcp.rto"])
	if s["tcp.rto"] < 3 || s["tcp.rto"] > 8 {
		t.Errorf("%d RTOs across a 5 s blackout; backoff from 1 s wants 3 to 8", s["tcp.rto"])
	}
	if d > 12*time.Second {
		t.Errorf("took %v after a 5 s blackout", d)
	}
}

// TestLossyLongPathCompletes is the lossy-proxy rig (100 ms RTT, 5% loss
// each way) that stalled transfers for minutes: 1 MB must arrive intact, and
// no RTO retransmission budget may run out.
func TestLossyLongPathCompletes(t *testing.T) {
	c, err := wire.Preset("pilot-5")
	if err != nil {
		t.Fatal(err)
	}
	p := newVPair(t, c, tcp.Options{}, tcp.Options{}, 22)
	d, _ := p.transfer(t, 1<<20, 120*time.Second)
	s := p.ra.Snapshot()
	t.Logf("1 MB at 5%% loss, 100 ms RTT: %v, %d recoveries, %d RTOs", d, s["tcp.recoveries"], s["tcp.rto"])
	if s["tcp.give-ups"] != 0 {
		t.Fatal("a connection gave up")
	}
}

// TestOneDSACKDoesNotUndoARecoveryWithRealLosses: slow start overflows a
// queue and loses hundreds of segments; a D-SACK for one needless
// retransmission among them must not restore the window (RFC 9438 §4.9 undoes
// only a congestion event shown spurious).
func TestOneDSACKDoesNotUndoARecoveryWithRealLosses(t *testing.T) {
	p := newVPair(t, lanCfg(), tcp.Options{}, tcp.Options{}, 21)
	p.transfer(t, 8<<20, 60*time.Second)
	ab, _ := p.w.Stats()
	s := p.ra.Snapshot()
	if ab.DropQueue < 100 {
		t.Fatalf("only %d queue drops; the test needs a real loss episode", ab.DropQueue)
	}
	if s["tcp.spurious"] != 0 || s["tcp.cc.undos"] != 0 {
		t.Fatalf("recovery undone (%d spurious, %d undos) after %d real drops", s["tcp.spurious"], s["tcp.cc.undos"], ab.DropQueue)
	}
}

// TestGrownWindowKeepsEveryOutOfOrderSegment: slow start overflows a queue
// with a window grown far past its start, leaving hundreds of holes; the
// receiver keeps every segment that arrived (the store's byte and range
// bounds follow the window), so each loss is retransmitted once and nothing
// arrives twice.
func TestGrownWindowKeepsEveryOutOfOrderSegment(t *testing.T) {
	p := newVPair(t, lanCfg(), tcp.Options{}, tcp.Options{}, 21)
	const n = 8 << 20
	p.transfer(t, n, 60*time.Second)
	ab, _ := p.w.Stats()
	rb := p.rb.Snapshot()
	unique := uint64((n + 1447) / 1448)
	t.Logf("drops %d, delivered %d frames for %d segments, ooo-full %d", ab.DropQueue, ab.DeliveredFrames, unique, rb["tcp.drops.ooo-full"])
	if ab.DropQueue < 100 {
		t.Fatalf("only %d drops; the test needs many holes", ab.DropQueue)
	}
	if rb["tcp.drops.ooo-full"] != 0 {
		t.Errorf("receiver dropped %d out-of-order bytes inside its window", rb["tcp.drops.ooo-full"])
	}
	if dup := int64(ab.DeliveredFrames) - int64(unique) - 8; dup > 8 {
		t.Errorf("%d data segments arrived twice", dup)
	}
}

// TestArmBOpensTheT14WindowFasterThanArmA is the arms' A/B on the t14 emulated
// path (1 Gbit/s, 2 ms, a Wi-Fi peer's stretch ACKs of up to 34 segments, a
// 256-slot TX ring): arm A (RFC 5681 growth, the old card rule) has received
// under 3 MB by 300 ms (metal: 2.0-2.1), arm B (HyStart++ L = 8, the
// half-window card rule) over 15 MB (metal: 23.9-25.4), with no loss in
// either.
func TestArmBOpensTheT14WindowFasterThanArmA(t *testing.T) {
	got := map[cc.Arm]int64{}
	for _, arm := range []cc.Arm{cc.ArmA, cc.ArmB} {
		cfg, err := wire.Preset("t14")
		if err != nil {
			t.Fatal(err)
		}
		p := newVPair(t, cfg, tcp.Options{Arm: arm}, tcp.Options{}, 31)
		by := p.receivedBy(t, 100*time.Millisecond, 300*time.Millisecond)
		s := p.ra.Snapshot()
		t.Logf("arm %v: %.2f MB by 100 ms, %.2f MB by 300 ms; card stops %d, retransmitted %d",
			arm, float64(by[0])/1e6, float64(by[1])/1e6, s["tcp.card-stops"], s["tcp.retransmitted.bytes"])
		if s["tcp.retransmitted.bytes"] != 0 {
			t.Errorf("arm %v lost data on a loss-free path", arm)
		}
		got[arm] = by[1]
	}
	if got[cc.ArmA] > 3e6 || got[cc.ArmB] < 15e6 {
		t.Errorf("by 300 ms: A %d bytes (want < 3 MB), B %d bytes (want > 15 MB)", got[cc.ArmA], got[cc.ArmB])
	}
}

// TestEverySegmentFitsTheMTUWithItsOptions: data flows both ways over loss,
// so data segments carry SACK blocks beside timestamps; each segment must
// still fit the MTU whole (options count against the MSS, RFC 9293 §3.7.1),
// never relying on IP fragmentation, with a valid checksum.
func TestEverySegmentFitsTheMTUWithItsOptions(t *testing.T) {
	cfg := lanCfg()
	cfg.AtoB.Loss, cfg.BtoA.Loss = 0.02, 0.02
	p := newVPair(t, cfg, tcp.Options{}, tcp.Options{}, 12)
	var frames, frags, bad int
	p.w.SetTrace(func(ev wire.TraceEvent) {
		if ev.Kind != wire.TraceSend {
			return
		}
		ip := header.IPv4(ev.Frame)
		frames++
		if ip.More() || ip.FragmentOffset() != 0 {
			frags++
			return
		}
		th := header.TCP(ip.Payload())
		x := header.PseudoHeaderChecksum(header.TCPProtocolNumber, ip.SourceAddress(), ip.DestinationAddress(), uint16(len(th)))
		if checksum.Checksum(th, x) != 0xffff {
			bad++
		}
	})
	cli, srv := p.dial(t, 5001)
	const n = 4 << 20
	s1, s2 := startSink(srv), startSink(cli)
	startSource(cli, 3, n)
	startSource(srv, 4, n)
	if !p.clk.RunUntil(func() bool { return s1.done() && s2.done() }, p.clk.Elapsed()+120*time.Second) {
		t.Fatalf("bidirectional transfer incomplete: %d and %d of %d", s1.n, s2.n, n)
	}
	h1, h2 := s1.h.Sum(nil), s2.h.Sum(nil)
	w1, w2 := streamHash(3, n), streamHash(4, n)
	if s1.n != n || s2.n != n || string(h1) != string(w1[:]) || string(h2) != string(w2[:]) {
		t.Fatal("bytes differ from the streams sent")
	}
	t.Logf("%d frames, %d IP fragments, %d bad checksums", frames, frags, bad)
	if frags != 0 || bad != 0 {
		t.Fatalf("%d of %d frames were IP fragments, %d had bad checksums", frags, frames, bad)
	}
}
