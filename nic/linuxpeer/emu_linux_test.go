//go:build linux

package linuxpeer

import (
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"sync"
	"testing"
	"time"
)

type arrivals struct {
	mu   sync.Mutex
	t    []time.Time
	lens []int
}

func (a *arrivals) out(b []byte) error {
	a.mu.Lock()
	a.t = append(a.t, time.Now())
	a.lens = append(a.lens, len(b))
	a.mu.Unlock()
	return nil
}

func (a *arrivals) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.t)
}

func (a *arrivals) wait(t *testing.T, n int, within time.Duration) []time.Time {
	t.Helper()
	end := time.Now().Add(within)
	for time.Now().Before(end) {
		a.mu.Lock()
		got := len(a.t)
		a.mu.Unlock()
		if got >= n {
			break
		}
		time.Sleep(time.Millisecond)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.t) != n {
		t.Fatalf("%d frames came out, want %d", len(a.t), n)
	}
	return append([]time.Time(nil), a.t...)
}

func TestPipeHoldsEachFrameForItsDelay(t *testing.T) {
	var a arrivals
	p := newPipe(Dir{Delay: 5 * time.Millisecond}, 1, 0, false, newBufPool(), a.out)
	defer p.close()
	start := time.Now()
	for i := 0; i < 10; i++ {
		p.submit(make([]byte, 100))
	}
	for i, at := range a.wait(t, 10, 2*time.Second) {
		if d := at.Sub(start); d < 5*time.Millisecond {
			t.Errorf("frame %d left after %v, before its 5 ms delay", i, d)
		}
	}
	if l := p.stats().Lateness; l.Frames != 10 {
		t.Errorf("lateness recorded for %d frames, want 10", l.Frames)
	}
}

func TestPipeSpacesFramesAtTheBottleneckRate(t *testing.T) {
	var a arrivals
	// 12 Mbit/s: a 1500-byte frame takes 1 ms to serialise.
	p := newPipe(Dir{RateBps: 12e6}, 1, 0, false, newBufPool(), a.out)
	defer p.close()
	start := time.Now()
	for i := 0; i < 20; i++ {
		p.submit(make([]byte, 1500))
	}
	for i, at := range a.wait(t, 20, 2*time.Second) {
		if min := time.Duration(i+1) * time.Millisecond; at.Sub(start) < min {
			t.Errorf("frame %d left after %v, before its serialisation slot at %v", i, at.Sub(start), min)
		}
	}
}

func TestPipeDropsTailBeyondQueueBound(t *testing.T) {
	var a arrivals
	p := newPipe(Dir{RateBps: 12e6, QueueBytes: 15000}, 1, 0, false, newBufPool(), a.out)
	defer p.close()
	// All 30 frames reach the bottleneck at one injected instant, so how
	// long the submissions take on a loaded machine cannot drain the queue.
	at := time.Now()
	for i := 0; i < 30; i++ {
		p.submitAt(at, make([]byte, 1500))
	}
	s := p.stats()
	// The bound counts every byte not yet serialised, the frame on the
	// wire included: ten 1500-byte frames fit 15000 bytes.
	if s.QueueDrop != 20 {
		t.Errorf("%d queue drops for 30 simultaneous frames into a 10-frame queue, want 20", s.QueueDrop)
	}
	a.wait(t, 30-int(s.QueueDrop), 2*time.Second)
}

func TestPipeLossIsSeededBernoulli(t *testing.T) {
	drops := func(seed uint64) int64 {
		p := newPipe(Dir{Loss: 0.1}, seed, 0, false, newBufPool(), func([]byte) error { return nil })
		defer p.close()
		for i := 0; i < 10000; i++ {
			p.submit(make([]byte, 64))
		}
		return p.stats().LossDrops
	}
	d1, d2, d3 := drops(7), drops(7), drops(8)
	if d1 < 800 || d1 > 1200 {
		t.Errorf("%d of 10000 frames lost at p=0.1", d1)
	}
	if d1 != d2 {
		t.Errorf("same seed lost %d then %d frames", d1, d2)
	}
	if d1 == d3 {
		t.Logf("seeds 7 and 8 happened to lose the same count (%d)", d1)
	}
}

func TestBadPathConfigIsRefused(t *testing.T) {
	for _, d := range []Dir{{Loss: 1.5}, {RateBps: -1}, {Delay: -time.Millisecond}, {Delay: time.Minute}} {
		cfg := Config{Path: Path{Out: d}}
		if err := cfg.fill(); err == nil {
			t.Errorf("direction %+v accepted", d)
		}
	}
	if err := (&Config{MTU: 100}).fill(); err == nil {
		t.Error("MTU 100 accepted")
	}
}

// tcpFrame is an Ethernet + IPv4 + TCP frame with n payload bytes.
func tcpFrame(n int, flags header.TCPFlags) []byte {
	b := make([]byte, header.EthernetMinimumSize+header.IPv4MinimumSize+header.TCPMinimumSize+n)
	header.Ethernet(b).Encode(&header.EthernetFields{Type: header.IPv4ProtocolNumber})
	ip := header.IPv4(b[header.EthernetMinimumSize:])
	ip.Encode(&header.IPv4Fields{TotalLength: uint16(len(ip)), TTL: 64, Protocol: uint8(header.TCPProtocolNumber)})
	header.TCP(ip[header.IPv4MinimumSize:]).Encode(&header.TCPFields{DataOffset: header.TCPMinimumSize, Flags: flags})
	return b
}

func TestPipeAggregatesAcksUntilDataOrHold(t *testing.T) {
	var acks arrivals
	pool := newBufPool()
	data := newPipe(Dir{}, 1, 0, false, pool, func([]byte) error { return nil })
	ack := newPipe(Dir{AckAggSegments: 4, AckAggHold: 50 * time.Millisecond}, 2, 0, false, pool, acks.out)
	data.other, ack.other = ack, data
	defer data.close()
	defer ack.close()

	for i := 0; i < 3; i++ {
		ack.submit(tcpFrame(0, header.TCPFlagAck))
	}
	time.Sleep(10 * time.Millisecond)
	if n := acks.count(); n != 0 {
		t.Fatalf("%d ACKs passed before any data, want them held", n)
	}
	for i := 0; i < 4; i++ {
		data.submit(tcpFrame(1000, header.TCPFlagAck))
	}
	acks.wait(t, 3, time.Second) // the fourth data segment delivered releases the three ACKs

	ack.submit(tcpFrame(0, header.TCPFlagAck))
	ack.submit(tcpFrame(0, header.TCPFlagAck))
	ack.submit(tcpFrame(10, header.TCPFlagAck|header.TCPFlagPsh))
	acks.wait(t, 6, time.Second) // data the ACK way releases the held ACKs ahead of itself
	if got := acks.lens[5]; got != len(tcpFrame(10, 0)) {
		t.Errorf("the last frame out is %d bytes, want the data frame after the ACKs it released", got)
	}

	start := time.Now()
	ack.submit(tcpFrame(0, header.TCPFlagAck))
	at := acks.wait(t, 7, time.Second)
	if d := at[6].Sub(start); d < 50*time.Millisecond {
		t.Errorf("a lone ACK left after %v, before its 50 ms hold", d)
	}
	if s := ack.stats(); s.AcksHeld != 6 || s.Releases != 3 {
		t.Errorf("held %d ACKs in %d releases, want 6 in 3", s.AcksHeld, s.Releases)
	}
	ack.submit(tcpFrame(0, header.TCPFlagAck|header.TCPFlagSyn))
	acks.wait(t, 8, time.Second) // a SYN-ACK is not a pure ACK: it passes at once
}

func TestLatenessBucketsBoundTheirValues(t *testing.T) {
	prev := -1
	for us := int64(0); us < 1<<20; us += 1 + us/7 {
		i := bucketOf(us)
		if i < prev {
			t.Fatalf("bucket of %d µs is %d, below the previous %d", us, i, prev)
		}
		prev = i
		top := bucketTop(i)
		if d := time.Duration(us) * time.Microsecond; d >= top {
			t.Fatalf("%d µs lands in bucket %d whose top is %v", us, i, top)
		}
		if i > 0 && time.Duration(us)*time.Microsecond < bucketTop(i-1) {
			t.Fatalf("%d µs lands in bucket %d but lies below bucket %d's top %v", us, i, i-1, bucketTop(i-1))
		}
		if us >= 4 && float64(top)/float64(time.Duration(us)*time.Microsecond) > 1.26 {
			t.Fatalf("bucket top %v is more than a quarter octave above %d µs", top, us)
		}
	}
}
