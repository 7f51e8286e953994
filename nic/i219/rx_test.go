package i219_test

import (
	"testing"
	"time"

	"github.com/netramp/netramp/nic/i219"
	"github.com/netramp/netramp/nic/i219/fake"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// sink is a dispatcher that records what the driver delivers.
type sink struct {
	protos []tcpip.NetworkProtocolNumber
	sizes  []int
	types  []tcpip.PacketType
}

func (s *sink) DeliverNetworkPacket(p tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) {
	s.protos = append(s.protos, p)
	s.sizes = append(s.sizes, pkt.Data().Size())
	s.types = append(s.types, pkt.PktType)
}
func (s *sink) DeliverLinkPacket(tcpip.NetworkProtocolNumber, *stack.PacketBuffer) {}

func openSink(t *testing.T, opt fake.Options, cfg i219.Config) (*fake.Device, *i219.Endpoint, *sink) {
	dev, ep := open(t, opt, cfg)
	s := &sink{}
	ep.Attach(s)
	return dev, ep, s
}

func TestRXDescriptorErrorsCountedNotDelivered(t *testing.T) {
	dev, ep, s := openSink(t, fake.Options{}, i219.Config{})
	dev.Inject(fake.RXFrame{Data: udpDatagram(7, []byte("x")), Errors: 1 << 31}) // RXE
	dev.Inject(fake.RXFrame{Data: udpDatagram(7, []byte("y")), Errors: 1 << 25}) // symbol error
	dev.Inject(fake.RXFrame{Data: udpDatagram(7, []byte("ok"))})
	ep.Poll()
	if len(s.sizes) != 1 {
		t.Fatalf("delivered %d frames, want only the good one", len(s.sizes))
	}
	if got := counter(ep, "nic.rx.errors"); got != 2 {
		t.Fatalf("nic.rx.errors = %d, want 2", got)
	}
}

func TestCRCErrorsFoldedFromReadToClearRegister(t *testing.T) {
	dev, ep, s := openSink(t, fake.Options{}, i219.Config{})
	for i := 0; i < 3; i++ {
		dev.Inject(fake.RXFrame{Data: udpDatagram(7, []byte("x")), CRCError: true})
	}
	dev.SetStat(fake.MPC, 2)
	dev.Clk.Advance(time.Second)
	ep.Poll()
	dev.Clk.Advance(time.Second)
	ep.Poll() // a second fold must not count the same errors again
	if len(s.sizes) != 0 {
		t.Fatal("a frame with a bad CRC was delivered")
	}
	if c, m := counter(ep, "nic.crc-errors"), counter(ep, "nic.rx.missed"); c != 3 || m != 2 {
		t.Fatalf("crc-errors %d missed %d, want 3 and 2", c, m)
	}
}

func TestFrameLongerThanBufferDropped(t *testing.T) {
	dev, ep, s := openSink(t, fake.Options{}, i219.Config{})
	long := make([]byte, 3000)
	copy(long, udpDatagram(7, nil))
	dev.Inject(fake.RXFrame{Data: long})
	dev.Inject(fake.RXFrame{Data: udpDatagram(7, []byte("after"))})
	ep.Poll()
	if len(s.sizes) != 1 {
		t.Fatalf("delivered %d frames, want only the one after the long frame", len(s.sizes))
	}
	if counter(ep, "nic.rx.too-long") != 1 {
		t.Fatalf("too-long = %d", counter(ep, "nic.rx.too-long"))
	}
}

// TestRXRingExhaustionCountedAndRecovered: more frames than descriptors
// arrive before a poll; the card counts no-buffer and missed frames, the
// driver delivers what fit, re-arms, and receives again.
func TestRXRingExhaustionCountedAndRecovered(t *testing.T) {
	dev, ep, s := openSink(t, fake.Options{RXFifoFrames: 2}, i219.Config{RXDescriptors: 8, PollBatch: 64})
	for i := 0; i < 20; i++ {
		dev.Inject(fake.RXFrame{Data: udpDatagram(7, []byte{byte(i)})})
	}
	dev.Clk.Advance(time.Second)
	ep.Poll()
	ep.Poll()
	if len(s.sizes) != 9 { // 7 armed descriptors, then 2 from the FIFO
		t.Fatalf("delivered %d, want 9", len(s.sizes))
	}
	dev.Clk.Advance(time.Second)
	ep.Poll()
	if nb, m := counter(ep, "nic.rx.no-buffer"), counter(ep, "nic.rx.missed"); nb != 13 || m != 11 {
		t.Fatalf("no-buffer %d missed %d, want 13 and 11", nb, m)
	}
	dev.Inject(fake.RXFrame{Data: udpDatagram(7, []byte("again"))})
	ep.Poll()
	if len(s.sizes) != 10 {
		t.Fatal("no frame received after exhaustion")
	}
}

func TestLinkDownAndUpCounted(t *testing.T) {
	dev, ep := open(t, fake.Options{}, i219.Config{})
	for _, up := range []bool{false, true} {
		dev.SetCable(up)
		ep.Poll() // LSC in ICR triggers the link check at once
		if ep.LinkUp() != up {
			t.Fatalf("LinkUp = %v after cable %v", ep.LinkUp(), up)
		}
	}
	if got := counter(ep, "nic.link.changes"); got != 2 {
		t.Fatalf("link changes %d, want 2", got)
	}
}

func TestUnattachedFramesCounted(t *testing.T) {
	dev, ep := open(t, fake.Options{}, i219.Config{})
	dev.Inject(fake.RXFrame{Data: udpDatagram(7, nil)})
	ep.Poll()
	if counter(ep, "nic.rx.unattached") != 1 {
		t.Fatal("frame without a stack not counted")
	}
}

func TestPacketTypeFromDestination(t *testing.T) {
	dev, ep, s := openSink(t, fake.Options{}, i219.Config{})
	dev.Inject(fake.RXFrame{Data: arpRequest()})
	dev.Inject(fake.RXFrame{Data: udpDatagram(7, nil)})
	ep.Poll()
	if len(s.types) != 2 || s.types[0] != tcpip.PacketBroadcast || s.types[1] != tcpip.PacketHost {
		t.Fatalf("packet types %v", s.types)
	}
}

func TestPauseRXLetsTheRingFillThenResumes(t *testing.T) {
	dev, ep, s := openSink(t, fake.Options{RXFifoFrames: 1}, i219.Config{RXDescriptors: 8})
	ep.PauseRX(true)
	for i := 0; i < 12; i++ {
		dev.Inject(fake.RXFrame{Data: udpDatagram(7, []byte{byte(i)})})
	}
	dev.Clk.Advance(time.Second)
	ep.Poll()
	if len(s.sizes) != 0 {
		t.Fatal("frames delivered while RX was paused")
	}
	if counter(ep, "nic.rx.no-buffer") == 0 || counter(ep, "nic.rx.missed") == 0 {
		t.Fatal("exhaustion not counted while paused")
	}
	ep.PauseRX(false)
	ep.Poll()
	ep.Poll()
	if len(s.sizes) != 8 { // 7 descriptors and 1 from the FIFO
		t.Fatalf("delivered %d after resuming, want 8", len(s.sizes))
	}
}
