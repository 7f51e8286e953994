package hosttests

import (
	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	gstack "gvisor.dev/gvisor/pkg/tcpip/stack"
)

// writeRewritten writes pkts to inner, first handing each TCP segment to
// edit; a segment edit changed (it reports true) is sent as a fresh frame
// with its checksum recomputed. The links that play a peer rewriting its
// options (tiny MSS, stripped SACK) share it.
func writeRewritten(inner gstack.LinkEndpoint, pkts gstack.PacketBufferList, edit func(header.TCP) bool) (int, tcpip.Error) {
	var out gstack.PacketBufferList
	var fresh []*gstack.PacketBuffer
	for _, pkt := range pkts.AsSlice() {
		var b []byte
		for _, v := range pkt.AsSlices() {
			b = append(b, v...)
		}
		ip := header.IPv4(b)
		if len(b) < header.IPv4MinimumSize || ip.Protocol() != uint8(header.TCPProtocolNumber) {
			out.PushBack(pkt)
			continue
		}
		tc := header.TCP(ip.Payload())
		if len(tc) < header.TCPMinimumSize || !edit(tc) {
			out.PushBack(pkt)
			continue
		}
		tc.SetChecksum(0)
		x := header.PseudoHeaderChecksum(header.TCPProtocolNumber, ip.SourceAddress(), ip.DestinationAddress(), uint16(len(tc)))
		tc.SetChecksum(^checksum.Checksum(tc, x))
		np := gstack.NewPacketBuffer(gstack.PacketBufferOptions{Payload: buffer.MakeWithData(b)})
		fresh = append(fresh, np)
		out.PushBack(np)
	}
	n, err := inner.WritePackets(out)
	for _, p := range fresh {
		p.DecRef()
	}
	return n, err
}
