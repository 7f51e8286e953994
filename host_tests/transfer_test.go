package hosttests

import (
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/header"

	"github.com/netramp/netramp/nic/wire"
	"github.com/netramp/netramp/stack/vtest"
	"github.com/netramp/netramp/tcp"
)

// transferOne moves n bytes A→B over cfg and checks the SHA-256.
func transferOne(t *testing.T, n int64, horizon time.Duration, discard bool) *vtest.Sink {
	t.Helper()
	p := newPair(t, gigabit(), tcp.Options{}, tcp.Options{}, 1)
	c, s := dial(t, p, vtest.SideA, 5001)
	start := time.Now()
	so, si := p.Start(c, s, n, 42)
	si.Discard = discard
	if err := p.Run(si.Done, horizon); err != nil {
		t.Fatalf("%v: received %d of %d;%s", err, si.Bytes(), n, tcpCounters(p.A.Counters()))
	}
	if err := vtest.Check(so, si, n); err != nil {
		t.Fatal(err)
	}
	wall := time.Since(start)
	t.Logf("%s in %v virtual (%.0f Mbit/s), %v wall;%s", mb(n), si.Duration(),
		float64(n)*8/si.Duration().Seconds()/1e6, wall, tcpCounters(p.A.Counters()))
	return si
}

func TestTransferOneMegabyteMatchesSHA256(t *testing.T) {
	transferOne(t, 1<<20, 10*time.Second, false)
}

func TestTransferSixtyFourMegabytesMatchesSHA256(t *testing.T) {
	transferOne(t, 64<<20, 60*time.Second, false)
}

func TestTransferOneGigabyteMatchesSHA256(t *testing.T) {
	if testing.Short() {
		t.Skip("1 GB transfer skipped under -short")
	}
	if raceEnabled {
		t.Skip("1 GB transfer skipped under -race: tens of minutes under the detector; the smaller transfers run the same paths")
	}
	transferOne(t, 1<<30, 120*time.Second, false)
}

func TestBothDirectionsAtOnceMatchSHA256(t *testing.T) {
	p := newPair(t, gigabit(), tcp.Options{}, tcp.Options{}, 1)
	d := echo(t, p, 16<<20, 60*time.Second)
	t.Logf("16 MB each way at once in %v virtual", d)
}

func TestHundredConcurrentConnectionsAllArriveWhole(t *testing.T) {
	const conns, n = 100, 1 << 20
	p := newPair(t, gigabit(), tcp.Options{}, tcp.Options{}, 1)
	type pair struct {
		so *vtest.Source
		si *vtest.Sink
	}
	var all []pair
	for i := 0; i < conns; i++ {
		from := vtest.SideA
		if i%2 == 1 {
			from = vtest.SideB // half the connections the other way
		}
		c, s := dial(t, p, from, uint16(6000+i%7))
		so, si := p.Start(c, s, n, int64(i))
		all = append(all, pair{so, si})
	}
	done := func() bool {
		for _, x := range all {
			if !x.si.Done() {
				return false
			}
		}
		return true
	}
	if err := p.Run(done, 120*time.Second); err != nil {
		left := 0
		for _, x := range all {
			if !x.si.Done() {
				left++
			}
		}
		t.Fatalf("%v: %d of %d connections unfinished", err, left, conns)
	}
	var slowest time.Duration
	for i, x := range all {
		if err := vtest.Check(x.so, x.si, n); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		slowest = max(slowest, x.si.Duration())
	}
	t.Logf("%d connections × %s done by %v virtual (slowest first-byte-to-EOF %v)", conns, mb(n), p.Clock.Elapsed(), slowest)
}

func TestEachOptionOnAndOffCarriesTheStreamOverALossyPath(t *testing.T) {
	// Every combination of SACK, timestamps and window scale, switched off
	// on one side (so negotiation must drop it) or both, over 1% loss.
	lossy := gigabit()
	lossy.AtoB.Loss, lossy.BtoA.Loss = 0.01, 0.01
	lossy.AtoB.Delay, lossy.BtoA.Delay = 10*time.Millisecond, 10*time.Millisecond
	cases := []struct {
		name string
		a, b tcp.Options
	}{
		{"all on", tcp.Options{}, tcp.Options{}},
		{"no SACK", tcp.Options{NoSACK: true}, tcp.Options{NoSACK: true}},
		{"no SACK at receiver", tcp.Options{}, tcp.Options{NoSACK: true}},
		{"no timestamps", tcp.Options{NoTimestamps: true}, tcp.Options{NoTimestamps: true}},
		{"no timestamps at sender", tcp.Options{NoTimestamps: true}, tcp.Options{}},
		{"no window scale", tcp.Options{NoWindowScale: true}, tcp.Options{NoWindowScale: true}},
		{"no window scale at receiver", tcp.Options{}, tcp.Options{NoWindowScale: true}},
		{"all off", tcp.Options{NoSACK: true, NoTimestamps: true, NoWindowScale: true},
			tcp.Options{NoSACK: true, NoTimestamps: true, NoWindowScale: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := lossy
			cfg.Seed = 3
			p := newPair(t, cfg, c.a, c.b, 1)
			var syn, synAck *header.TCPSynOptions
			p.Wire.SetTrace(func(ev wire.TraceEvent) {
				if ev.Kind != wire.TraceSend {
					return
				}
				tc := header.TCP(header.IPv4(ev.Frame).Payload())
				if tc.Flags()&header.TCPFlagSyn == 0 {
					return
				}
				o := header.ParseSynOptions(tc.Options(), tc.Flags()&header.TCPFlagAck != 0)
				if tc.Flags()&header.TCPFlagAck == 0 {
					syn = &o
				} else {
					synAck = &o
				}
			})
			cl, sv := dial(t, p, vtest.SideA, 5001)
			p.Wire.SetTrace(nil)
			if syn == nil || synAck == nil {
				t.Fatal("handshake not seen on the wire")
			}
			// The SYN offers what A allows; the SYN-ACK agrees only to what both do.
			checks := []struct {
				what              string
				inSyn, inSynAck   bool
				wantSyn, wantBoth bool
			}{
				{"SACK-permitted", syn.SACKPermitted, synAck.SACKPermitted, !c.a.NoSACK, !c.a.NoSACK && !c.b.NoSACK},
				{"timestamps", syn.TS, synAck.TS, !c.a.NoTimestamps, !c.a.NoTimestamps && !c.b.NoTimestamps},
				{"window scale", syn.WS >= 0, synAck.WS >= 0, !c.a.NoWindowScale, !c.a.NoWindowScale && !c.b.NoWindowScale},
			}
			for _, k := range checks {
				if k.inSyn != k.wantSyn || k.inSynAck != k.wantBoth {
					t.Errorf("%s: in SYN %v (want %v), in SYN-ACK %v (want %v)", k.what, k.inSyn, k.wantSyn, k.inSynAck, k.wantBoth)
				}
			}
			_, si, err := p.Transfer(cl, sv, 4<<20, 9, 300*time.Second)
			if err != nil {
				t.Fatalf("%v;%s", err, tcpCounters(p.A.Counters()))
			}
			t.Logf("4 MB in %v virtual; retransmitted %d bytes, %d RTOs",
				si.Duration(), counter(p.A.Counters(), "tcp.retransmitted.bytes"), counter(p.A.Counters(), "tcp.rto"))
		})
	}
}

func TestSameSeedGivesTheSameWireTraceAndAnotherSeedDoesNot(t *testing.T) {
	for _, name := range []string{"pilot-2", "pilot-5"} {
		t.Run(name, func(t *testing.T) {
			run := func(seed int64) [32]byte {
				cfg := preset(t, name)
				cfg.Seed = seed
				p := newPair(t, cfg, tcp.Options{}, tcp.Options{}, seed)
				c, s := dial(t, p, vtest.SideA, 5001)
				c2, s2 := dial(t, p, vtest.SideB, 5002)
				so1, si1 := p.Start(c, s, 1<<20, 1)
				so2, si2 := p.Start(c2, s2, 1<<20, 2)
				if err := p.Run(func() bool { return si1.Done() && si2.Done() }, 600*time.Second); err != nil {
					t.Fatal(err)
				}
				if err := vtest.Check(so1, si1, 1<<20); err != nil {
					t.Fatal(err)
				}
				if err := vtest.Check(so2, si2, 1<<20); err != nil {
					t.Fatal(err)
				}
				return p.Wire.TraceHash()
			}
			a, b, c := run(7), run(7), run(8)
			if a != b {
				t.Fatalf("seed 7 twice: trace %x vs %x", a, b)
			}
			if a == c {
				t.Fatal("seeds 7 and 8 gave one trace: the seed does not reach the run")
			}
			t.Logf("seed 7 trace %x (twice), seed 8 %x", a[:8], c[:8])
		})
	}
}

func TestClosedConnectionsLeaveNoTimerBehindAfterTimeWait(t *testing.T) {
	// Ten connections carry 1 MB each and close; once TIME-WAIT (60 s) has
	// passed, nothing of them may still be scheduled on the clock.
	p := newPair(t, gigabit(), tcp.Options{}, tcp.Options{}, 1)
	for i := 0; i < 10; i++ {
		c, s := dial(t, p, vtest.Side(i%2), 5001)
		if _, _, err := p.Transfer(c, s, 1<<20, int64(i), 10*time.Second); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	before := p.Clock.Pending()
	p.Clock.RunFor(2 * tcp.DefaultTimeWait)
	if n := p.Clock.Pending(); n != 0 {
		t.Fatalf("%d timers still pending 2 minutes after the last close (%d right after)", n, before)
	}
	t.Logf("%d timers pending right after the closes, none after TIME-WAIT", before)
}
