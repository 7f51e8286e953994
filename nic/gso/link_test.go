package gso

import (
	"strings"
	"testing"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/link/pipe"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netramp/netramp/nic"
	"github.com/netramp/netramp/nic/bursttest"
)

// write writes one packet of payload at l, a GSO one when mss > 0.
func write(t *testing.T, l stack.LinkEndpoint, payload []byte, mss uint16) {
	t.Helper()
	b := ipv4Packet(payload)
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{ReserveHeaderBytes: 40, Payload: buffer.MakeWithData(b[40:])})
	copy(pkt.TransportHeader().Push(20), b[20:40])
	copy(pkt.NetworkHeader().Push(20), b[:20])
	pkt.NetworkProtocolNumber = header.IPv4ProtocolNumber
	if mss > 0 {
		pkt.GSOOptions = stack.GSO{Type: stack.GSOTCPv4, MSS: mss, NeedsCsum: true}
	}
	var pkts stack.PacketBufferList
	pkts.PushBack(pkt)
	if n, err := l.WritePackets(pkts); err != nil || n != 1 {
		t.Fatalf("WritePackets = %d, %v", n, err)
	}
	pkts.DecRef()
}

// TestPipeDeliversEachWriteAsOneBurst: the frames a GSO packet written at
// one end of NewPipe is cut into reach the far end's dispatcher between one
// BeginBurst and one EndBurst; a write of one frame is no burst, and a Link
// over a pipe end of its own (NewLink) reports none.
func TestPipeDeliversEachWriteAsOneBurst(t *testing.T) {
	a, b, err := NewPipe(1500, LinkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	near, far := &bursttest.Log{}, &bursttest.Log{}
	a.Attach(near)
	b.Attach(far)
	write(t, a, make([]byte, 3000), 1460)
	if got := far.Take(); got != "begin frame frame frame end" {
		t.Errorf("a GSO packet of three frames: far end got %q", got)
	}
	write(t, b, make([]byte, 100), 0)
	if got := near.Take(); got != "frame" {
		t.Errorf("one frame: near end got %q, want no burst", got)
	}
	if got := far.Take(); got != "" {
		t.Errorf("a write at the far end reached its own dispatcher: %q", got)
	}

	pa, pb := pipe.New("", "", 1500)
	alone, err := NewLink(pa, LinkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	log := &bursttest.Log{}
	pb.Attach(log)
	write(t, alone, make([]byte, 3000), 1460)
	if got := log.Take(); got != "frame frame frame" {
		t.Errorf("NewLink's frames: far end got %q, want no burst", got)
	}
}

// TestPipeWithoutFarDispatcherDeliversNothing: once the far end is
// detached, a write reports no burst to the dispatcher it had.
func TestPipeWithoutFarDispatcherDeliversNothing(t *testing.T) {
	a, b, err := NewPipe(1500, LinkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	log := &bursttest.Log{}
	b.Attach(log)
	b.Attach(nil)
	write(t, a, make([]byte, 3000), 1460)
	if got := log.Take(); got != "" {
		t.Errorf("detached far end got %q", got)
	}
}

// TestNoGSOPipeOffersNoGSO: NewPipe with NoGSO offers no GSO yet takes
// gathered writes (nic.BurstWriter); NoGSO with GSO options is an error
// naming them, and a lone Link takes no gathered writes.
func TestNoGSOPipeOffersNoGSO(t *testing.T) {
	a, _, err := NewPipe(1500, LinkOptions{NoGSO: true})
	if err != nil {
		t.Fatal(err)
	}
	if g := a.SupportedGSO(); g != stack.GSONotSupported {
		t.Errorf("SupportedGSO = %v, want GSONotSupported", g)
	}
	if a.GSOMaxSize() != 0 {
		t.Errorf("GSOMaxSize = %d, want 0", a.GSOMaxSize())
	}
	if bw, ok := any(a).(nic.BurstWriter); !ok || !bw.WritesBursts() {
		t.Error("a NewPipe end does not claim gathered writes")
	}
	for _, o := range []LinkOptions{{NoGSO: true, MaxSize: 9000}, {NoGSO: true, GRO: true}} {
		if _, _, err := NewPipe(1500, o); err == nil || !strings.Contains(err.Error(), "NoGSO") {
			t.Errorf("%+v: error %v, want one naming NoGSO", o, err)
		}
	}
	pa, _ := pipe.New("", "", 1500)
	l, err := NewLink(pa, LinkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l.WritesBursts() {
		t.Error("a Link without a far end claims gathered writes")
	}
}
