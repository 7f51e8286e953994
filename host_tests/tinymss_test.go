package hosttests

import (
	"sync"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	gstack "gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netramp/netramp/nic/wire"
	"github.com/netramp/netramp/stack"
	"github.com/netramp/netramp/stack/tcptest"
	"github.com/netramp/netramp/stack/vclock"
	"github.com/netramp/netramp/stack/vtest"
	"github.com/netramp/netramp/tcp"
)

// flightProbe watches one connection from both wire ends: the highest
// sequence the sender (side A) has sent, the receiver's latest ACK, and the
// most sent and not yet acknowledged at any moment. On side B it also
// rewrites the MSS option of the receiver's SYN-ACK to mss: a peer that asks
// for tiny segments.
type flightProbe struct {
	mu             sync.Mutex
	mss            uint16
	rewrote        bool
	sndMax, ack    uint32
	started        bool
	maxOutstanding uint32
}

type flightLink struct {
	tcptest.Wrapper
	p    *flightProbe
	side vtest.Side
}

func (l *flightLink) WritePackets(pkts gstack.PacketBufferList) (int, tcpip.Error) {
	return writeRewritten(l.LinkEndpoint, pkts, l.observe)
}

// observe records tc and reports whether it rewrote it.
func (l *flightLink) observe(tc header.TCP) bool {
	p := l.p
	p.mu.Lock()
	defer p.mu.Unlock()
	syn := tc.Flags()&header.TCPFlagSyn != 0
	switch {
	case l.side == vtest.SideA && !syn && len(tc.Payload()) > 0:
		end := tc.SequenceNumber() + uint32(len(tc.Payload()))
		if !p.started || int32(end-p.sndMax) > 0 {
			p.sndMax = end
		}
		p.started = true
	case l.side == vtest.SideB && !syn && tc.Flags()&header.TCPFlagAck != 0:
		if int32(tc.AckNumber()-p.ack) > 0 || p.ack == 0 {
			p.ack = tc.AckNumber()
		}
	case l.side == vtest.SideB && syn:
		o := tc.Options()
		for i := 0; i+4 <= len(o) && o[i] != 0; {
			if o[i] == 1 {
				i++
				continue
			}
			if o[i] == header.TCPOptionMSS && o[i+1] == 4 {
				o[i+2], o[i+3] = byte(p.mss>>8), byte(p.mss)
				p.rewrote = true
				return true
			}
			if o[i+1] < 2 {
				break
			}
			i += int(o[i+1])
		}
	}
	if p.started && p.ack != 0 && int32(p.sndMax-p.ack) > int32(p.maxOutstanding) {
		p.maxOutstanding = p.sndMax - p.ack
	}
	return false
}

func TestPeerForcingATinyMSSGetsABoundedQueue(t *testing.T) {
	// The peer asks for segments of 1 byte. We send 48 (the MSS floor,
	// 36 bytes of data beside timestamps), and no more of them in flight
	// than the send buffer holds in 536-byte segments, on a path whose
	// window would otherwise carry tens of thousands of them.
	const sendBuf = 4 << 20
	const payload = 48 - 12
	capSegs := sendBuf/536 + 64
	dir := wire.Dir{RateBps: 1e9, Delay: 5 * time.Millisecond}
	probe := &flightProbe{mss: 1}
	p, err := vtest.NewPairLinks(wire.Config{AtoB: dir, BtoA: dir},
		stack.Options{TCP: tcp.Options{SendBufferMax: sendBuf}}, stack.Options{}, 1,
		func(side vtest.Side, ep gstack.LinkEndpoint, _ *vclock.Clock) gstack.LinkEndpoint {
			return &flightLink{Wrapper: tcptest.Wrapper{LinkEndpoint: ep}, p: probe, side: side}
		})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	c, s := dial(t, p, vtest.SideA, 5001)
	_, si, err := p.Transfer(c, s, 2<<20, 9, 120*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	capStops := counter(p.A.Counters(), "tcp.stops.segment-cap")
	t.Logf("%v; most outstanding %d B (%d segments, cap %d); %d cap stops;%s", si.Duration(),
		probe.maxOutstanding, int(probe.maxOutstanding)/payload, capSegs, capStops, tcpCounters(p.A.Counters()))
	if !probe.rewrote {
		t.Fatal("the SYN-ACK's MSS was not rewritten: the scenario did not happen")
	}
	if n := int(probe.maxOutstanding) / payload; n > capSegs {
		t.Errorf("%d segments outstanding, cap %d: the queue grew with the peer's tiny MSS", n, capSegs)
	}
	if capStops == 0 {
		t.Errorf("the segment cap never stopped a send: the path did not test it")
	}
}
