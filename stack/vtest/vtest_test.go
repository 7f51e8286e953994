package vtest

import (
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	gstack "gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netramp/netramp/nic/wire"
	"github.com/netramp/netramp/stack/vclock"
	"github.com/netramp/netramp/tcp"
)

func lan() wire.Config {
	d := wire.Dir{RateBps: 1e9, Delay: time.Millisecond}
	return wire.Config{AtoB: d, BtoA: d}
}

func TestStreamHashMatchesTheStreamRead(t *testing.T) {
	s := NewStream(5)
	a := make([]byte, 1000)
	s.Read(a)
	if StreamHash(5, 1000) != sha256.Sum256(a) {
		t.Fatal("StreamHash differs from the stream's bytes")
	}
	if StreamHash(5, 1000) == StreamHash(6, 1000) {
		t.Fatal("two seeds give one stream")
	}
}

func TestTransferOfOneMegabyteArrivesWhole(t *testing.T) {
	p, err := NewPair(lan(), tcp.Options{}, tcp.Options{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, s, err := p.Dial(SideA, 5001)
	if err != nil {
		t.Fatal(err)
	}
	so, si, err := p.Transfer(c, s, 1<<20, 3, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if so.Sent() != 1<<20 || si.ReceivedBy(time.Hour) != 1<<20 || si.ReceivedBy(-1) != 0 {
		t.Fatalf("sent %d, received by end %d", so.Sent(), si.ReceivedBy(time.Hour))
	}
	if lead := si.FirstByteAfter(); lead <= 0 || si.ReceivedBySinceStart(lead-1) != 0 || si.ReceivedBySinceStart(time.Hour) != 1<<20 {
		t.Fatalf("first byte %v after Start; since-start marks wrong", lead)
	}
	if si.ReceivedBySinceStart(si.FirstByteAfter()) != si.ReceivedBy(0) {
		t.Fatal("the two mark origins disagree at the first byte")
	}
	marks := si.Marks()
	for i := 1; i < len(marks); i++ {
		if marks[i].At <= marks[i-1].At || marks[i].Bytes <= marks[i-1].Bytes {
			t.Fatalf("marks not increasing at %d: %v %v", i, marks[i-1], marks[i])
		}
	}
	t.Logf("1 MB in %v virtual, %d marks, wire trace %x", si.Duration(), len(marks), p.Wire.TraceHash())
}

func TestSameSeedGivesTheSameWireTrace(t *testing.T) {
	run := func() [32]byte {
		p, err := NewPair(lan(), tcp.Options{}, tcp.Options{}, 9)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		c, s, err := p.Dial(SideA, 80)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := p.Transfer(c, s, 300<<10, 1, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		return p.Wire.TraceHash()
	}
	if a, b := run(), run(); a != b {
		t.Fatalf("two runs of one seed: %x vs %x", a, b)
	}
}

func TestSourceWaitsOutBackpressureWithoutError(t *testing.T) {
	// A 16 KiB send buffer on a 10 Mbit/s path: the endpoint refuses writes
	// many times; the source must wait for writability each time and finish.
	d := wire.Dir{RateBps: 10e6, Delay: 5 * time.Millisecond}
	small := tcp.Options{SendBufferMax: 16 << 10}
	p, err := NewPair(wire.Config{AtoB: d, BtoA: d}, small, small, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, s, err := p.Dial(SideA, 9)
	if err != nil {
		t.Fatal(err)
	}
	so, _, err := p.Transfer(c, s, 2<<20, 4, 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if so.Blocked() == 0 {
		t.Fatal("the source never met backpressure: the test does not test it")
	}
	t.Logf("source refused %d times, finished without error", so.Blocked())
}

func TestDialsFromBothSidesPairTheirOwnEnds(t *testing.T) {
	p, err := NewPair(lan(), tcp.Options{}, tcp.Options{}, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := 0; i < 6; i++ {
		from := Side(i % 2)
		c, s, err := p.Dial(from, 700)
		if err != nil {
			t.Fatal(err)
		}
		ca, _ := c.EP.GetLocalAddress()
		sa, _ := s.EP.GetRemoteAddress()
		if ca.Port != sa.Port || ca.Addr.String() != p.Addr(from).String() {
			t.Fatalf("dial %d: client %v, server sees %v", i, ca, sa)
		}
		if _, _, err := p.Transfer(c, s, 10000, int64(i), 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOneTransferReportsTheRampAndRepeats(t *testing.T) {
	r := Run{Wire: lan(), Bytes: 4 << 20, Seed: 6}
	a, err := OneTransfer(r)
	if err != nil {
		t.Fatal(err)
	}
	b, err := OneTransfer(r)
	if err != nil {
		t.Fatal(err)
	}
	if a.TraceHash != b.TraceHash || a.Duration != b.Duration {
		t.Fatalf("two runs differ: %v vs %v", a.Duration, b.Duration)
	}
	if a.ReceivedBy(a.Duration) != 4<<20 || a.Sender["tcp.sent.bytes"] != 4<<20 || a.AtoB.DeliveredFrames == 0 {
		t.Fatalf("result incomplete: by end %d, sent %d", a.ReceivedBy(a.Duration), a.Sender["tcp.sent.bytes"])
	}
	t.Logf("4 MB in %v virtual; %d marks", a.Duration, len(a.Marks))
}

func TestAHorizonRunReturnsWhatItMeasured(t *testing.T) {
	// 100 MB cannot cross a 10 Mbit/s path in 2 s: the run must stop at its
	// horizon and still report what arrived, with an error saying so.
	d := wire.Dir{RateBps: 10e6, Delay: 5 * time.Millisecond}
	res, err := OneTransfer(Run{Wire: wire.Config{AtoB: d, BtoA: d}, Bytes: 100 << 20, Seed: 2, Horizon: 2 * time.Second, Discard: true})
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	if res == nil || res.Done {
		t.Fatalf("result %+v: want a measured, unfinished run", res)
	}
	// About 2 s of a 10 Mbit/s line, less the handshake and the ramp.
	if res.Received < 1<<20 || res.Received > 2_500_000 || res.ReceivedBy(time.Hour) != res.Received {
		t.Fatalf("received %d (by the last mark %d), want 1–2.5 MB", res.Received, res.ReceivedBy(time.Hour))
	}
	if res.Sender["tcp.sent.bytes"] < uint64(res.Received) || res.AtoB.DeliveredFrames == 0 {
		t.Fatalf("counters not read at the horizon: sent %d, delivered frames %d", res.Sender["tcp.sent.bytes"], res.AtoB.DeliveredFrames)
	}
}

func TestOneTransferHandsTheTraceAndTheClockToTheCaller(t *testing.T) {
	var traced, wrapped int
	var clocks []*vclock.Clock
	r := Run{Wire: lan(), Bytes: 100_000, Seed: 4,
		Trace: func(ev wire.TraceEvent) {
			if ev.Kind == wire.TraceDeliver {
				traced++
			}
		},
		Wrap: func(side Side, ep gstack.LinkEndpoint, clk *vclock.Clock) gstack.LinkEndpoint {
			wrapped++
			clocks = append(clocks, clk)
			return ep
		},
	}
	res, err := OneTransfer(r)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Done || uint64(traced) != res.AtoB.DeliveredFrames+res.BtoA.DeliveredFrames {
		t.Fatalf("trace saw %d deliveries, wire delivered %d+%d", traced, res.AtoB.DeliveredFrames, res.BtoA.DeliveredFrames)
	}
	if wrapped != 2 || clocks[0] == nil || clocks[0] != clocks[1] || clocks[0].Elapsed() != res.VirtualEnd {
		t.Fatalf("wrap called %d times with clocks %v; want both sides, one clock at the run's end", wrapped, clocks)
	}
}
