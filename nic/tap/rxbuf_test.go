package tap

import (
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// tcpFrame is a frame of payload bytes of TCP after an l3-byte link header,
// over IPv4 (with ipOpts bytes of options) or IPv6, the TCP header with
// tcpOpts bytes of options.
func tcpFrame(l3 int, v6 bool, ipOpts, tcpOpts, payload int) []byte {
	ipLen := header.IPv4MinimumSize + ipOpts
	if v6 {
		ipLen = header.IPv6MinimumSize
	}
	tcpLen := header.TCPMinimumSize + tcpOpts
	f := make([]byte, l3+ipLen+tcpLen+payload)
	ip := f[l3:]
	if v6 {
		header.IPv6(ip).Encode(&header.IPv6Fields{PayloadLength: uint16(tcpLen + payload), TransportProtocol: header.TCPProtocolNumber, HopLimit: 64})
	} else {
		header.IPv4(ip).Encode(&header.IPv4Fields{TotalLength: uint16(ipLen + tcpLen + payload), Protocol: uint8(header.TCPProtocolNumber), TTL: 64})
		ip[0] = 0x40 | byte(ipLen/4)
	}
	header.TCP(ip[ipLen:]).Encode(&header.TCPFields{DataOffset: uint8(tcpLen), Flags: header.TCPFlagAck})
	return f
}

// TestRxBufferPutsTCPHeadersInAViewOfTheirOwn: a received TCP frame's link,
// IP and TCP headers (options included) go in the buffer's first view, of
// the smallest chunk that holds them, and its payload in a second, so a
// copy of the header view's chunk copies a few payload bytes at most; frames that are small, not TCP, fragments or cut short stay in
// one view.
func TestRxBufferPutsTCPHeadersInAViewOfTheirOwn(t *testing.T) {
	udp := tcpFrame(14, false, 0, 0, 1000)
	header.IPv4(udp[14:]).Encode(&header.IPv4Fields{TotalLength: uint16(len(udp) - 14), Protocol: uint8(header.UDPProtocolNumber), TTL: 64})
	frag := tcpFrame(14, false, 0, 0, 1000)
	header.IPv4(frag[14:]).SetFlagsFragmentOffset(header.IPv4FlagMoreFragments, 0)
	badOff := tcpFrame(0, false, 0, 0, 1000)
	badOff[header.IPv4MinimumSize+12] = 0x20 // data offset 8 bytes, under the TCP minimum
	for _, c := range []struct {
		name  string
		frame []byte
		first int // the first view's length
	}{
		{"TAP, IPv4, 64 KB GRO frame", tcpFrame(14, false, 0, 12, 65000), 14 + 20 + 32},
		{"TUN, IPv4 with options", tcpFrame(0, false, 8, 12, 1448), 28 + 32},
		{"TAP, IPv6", tcpFrame(14, true, 0, 12, 1448), 14 + 40 + 32},
		{"small frame", tcpFrame(14, false, 0, 12, 100), 14 + 20 + 32 + 100},
		{"UDP", udp, len(udp)},
		{"IPv4 fragment", frag, len(frag)},
		{"TCP data offset under 20", badOff, len(badOff)},
	} {
		t.Run(c.name, func(t *testing.T) {
			l3 := 14
			if c.name == "TUN, IPv4 with options" || c.name == "TCP data offset under 20" {
				l3 = 0
			}
			b := rxBuffer(c.frame, l3)
			defer b.Release()
			if got := int(b.Size()); got != len(c.frame) {
				t.Fatalf("buffer holds %d bytes, want the frame's %d", got, len(c.frame))
			}
			// The buffer fills the header view's chunk with the first
			// payload bytes; what matters is that the chunk is the
			// smallest that holds the headers, not the frame's.
			want := c.first
			if want < len(c.frame) {
				want = 64 // gVisor's smallest pooled chunk, doubled until the headers fit
				for want < c.first {
					want *= 2
				}
			}
			views := b.AsViewList()
			if got := views.Front().Size(); got != want {
				t.Errorf("first view %d bytes, want %d (headers %d)", got, want, c.first)
			}
			if string(b.Flatten()) != string(c.frame) {
				t.Errorf("buffer's bytes differ from the frame's")
			}
		})
	}
}
