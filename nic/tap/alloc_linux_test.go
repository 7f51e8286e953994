//go:build linux

package tap_test

import (
	"testing"

	"github.com/netramp/netramp/nic/tap"
	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// tcpFrame is an outbound Ethernet + IPv4 + TCP packet from us to the
// kernel's address, built as a TCP and the endpoint's AddHeader build it:
// headers pushed in front of a payload of several views. With mss > 0 it
// is a GSO packet whose checksum field holds the pseudo-header sum, for
// the kernel to segment and finish.
func tcpFrame(payload []byte, views int, mss uint16) *stack.PacketBuffer {
	var data buffer.Buffer
	for i := range views {
		lo, hi := i*len(payload)/views, (i+1)*len(payload)/views
		if err := data.Append(buffer.NewViewWithData(payload[lo:hi])); err != nil {
			panic(err)
		}
	}
	src, dst := tcpip.AddrFrom4(ourAddr.As4()), tcpip.AddrFrom4(kernAddr.As4())
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{
		ReserveHeaderBytes: header.EthernetMinimumSize + header.IPv4MinimumSize + header.TCPMinimumSize,
		Payload:            data,
	})
	tcpLen := uint16(header.TCPMinimumSize + len(payload))
	tcp := header.TCP(pkt.TransportHeader().Push(header.TCPMinimumSize))
	tcp.Encode(&header.TCPFields{SrcPort: 40000, DstPort: 9, SeqNum: 1, AckNum: 1, DataOffset: header.TCPMinimumSize,
		Flags: header.TCPFlagAck, WindowSize: 1000})
	ip := header.IPv4(pkt.NetworkHeader().Push(header.IPv4MinimumSize))
	ip.Encode(&header.IPv4Fields{TotalLength: header.IPv4MinimumSize + tcpLen, TTL: 64, Flags: header.IPv4FlagDontFragment,
		Protocol: uint8(header.TCPProtocolNumber), SrcAddr: src, DstAddr: dst})
	ip.SetChecksum(^ip.CalculateChecksum())
	header.Ethernet(pkt.LinkHeader().Push(header.EthernetMinimumSize)).Encode(&header.EthernetFields{
		SrcAddr: tcpip.LinkAddress(ourMAC), DstAddr: tcpip.LinkAddress(kernelMAC), Type: header.IPv4ProtocolNumber})
	pkt.NetworkProtocolNumber = header.IPv4ProtocolNumber
	pseudo := header.PseudoHeaderChecksum(header.TCPProtocolNumber, src, dst, tcpLen)
	if mss == 0 {
		tcp.SetChecksum(^tcp.CalculateChecksum(checksum.Checksum(payload, pseudo)))
		return pkt
	}
	tcp.SetChecksum(pseudo)
	pkt.GSOOptions = stack.GSO{Type: stack.GSOTCPv4, NeedsCsum: true, CsumOffset: header.TCPChecksumOffset,
		MSS: mss, L3HdrLen: header.IPv4MinimumSize, MaxSize: 1 << 16}
	return pkt
}

// TestTAPSteadyWritesAllocateNothing: once the first call has warmed the
// endpoint, writing a frame to a real TAP allocates nothing, plain or GSO,
// behind a virtio-net header or not: the gather list, the header and the
// frame's pieces are the endpoint's reused scratch, not made per frame.
func TestTAPSteadyWritesAllocateNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own: run this test without -race")
	}
	const runs = 200
	payload := make([]byte, 6000)
	for i := range payload {
		payload[i] = byte(i)
	}
	for _, c := range []struct {
		name string
		cfg  tap.Config
		o    tap.Options
		pkt  func() *stack.PacketBuffer
		gso  uint64 // frames of the run written as GSO packets
	}{
		{"plain", tap.Config{}, tap.Options{}, func() *stack.PacketBuffer { return tcpFrame(payload[:1000], 3, 0) }, 0},
		{"vnet-hdr", tap.Config{VnetHdr: true, Offload: true}, tap.Options{GSO: true}, func() *stack.PacketBuffer { return tcpFrame(payload[:1000], 3, 0) }, 0},
		{"gso", tap.Config{VnetHdr: true, Offload: true}, tap.Options{GSO: true}, func() *stack.PacketBuffer { return tcpFrame(payload, 5, 1448) }, runs + 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, dev := kernelSide(t, c.cfg)
			c.o.MAC = ourMAC
			ep, err := tap.New(dev, c.o)
			if err != nil {
				t.Fatal(err)
			}
			var l stack.PacketBufferList
			l.PushBack(c.pkt())
			defer l.DecRef()
			allocs := testing.AllocsPerRun(runs, func() {
				if n, err := ep.WritePackets(l); n != 1 || err != nil {
					t.Fatalf("WritePackets = %d, %v", n, err)
				}
			})
			cn := ep.Counters()
			// AllocsPerRun's warm-up call is the one more.
			if cn.TxFrames.Load() != runs+1 || cn.TxDrops.Load() != 0 || cn.TxGSO.Load() != c.gso {
				t.Fatalf("%d frames written (%d GSO), %d dropped; want %d (%d) and 0",
					cn.TxFrames.Load(), cn.TxGSO.Load(), cn.TxDrops.Load(), runs+1, c.gso)
			}
			if allocs != 0 {
				t.Errorf("%.1f allocations per frame written, want 0", allocs)
			}
		})
	}
}
