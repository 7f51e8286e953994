package hosttests

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"

	"github.com/netramp/netramp/nic/wire"
	"github.com/netramp/netramp/tcp"
)

// segmentCheck verifies every TCP segment a stack hands to the wire: it
// fits the MTU whole (TCP never relies on IP fragmentation: SMSS leaves room
// for the options, RFC 9293 §3.7.1), with a valid IPv4 header and a TCP
// checksum over the whole segment.
type segmentCheck struct {
	mu    sync.Mutex
	n     int
	frags int
	bad   int
	first string
}

func (c *segmentCheck) see(ev wire.TraceEvent) {
	if ev.Kind != wire.TraceSend {
		return
	}
	ip := header.IPv4(ev.Frame)
	if len(ev.Frame) < header.IPv4MinimumSize || ip.Protocol() != uint8(header.TCPProtocolNumber) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	if ip.More() || ip.FragmentOffset() != 0 {
		c.frags++
		if c.first == "" && ip.More() {
			tc := header.TCP(ip.Payload())
			c.first = fmt.Sprintf("at %v %s: IP fragment, TCP header %d, IP length %d", ev.At, ev.Dir, tc.DataOffset(), ip.TotalLength())
		}
		return
	}
	ok := ip.IsValid(len(ev.Frame)) && ip.IsChecksumValid()
	if ok {
		tc := header.TCP(ip.Payload())
		x := header.PseudoHeaderChecksum(header.TCPProtocolNumber, ip.SourceAddress(), ip.DestinationAddress(), uint16(len(tc)))
		ok = len(tc) >= header.TCPMinimumSize && checksum.Checksum(tc, x) == 0xffff
		if !ok && c.first == "" {
			o := header.ParseTCPOptions(tc.Options())
			c.first = fmt.Sprintf("at %v %s: flags %v seq %d, header %d, payload %d, SACK blocks %d, IP length %d",
				ev.At, ev.Dir, tc.Flags(), tc.SequenceNumber(), tc.DataOffset(), len(tc.Payload()), len(o.SACKBlocks), ip.TotalLength())
		}
	}
	if !ok {
		c.bad++
	}
}

func TestEverySegmentSentFitsTheMTUWithValidChecksums(t *testing.T) {
	// Traffic both ways over loss, so data segments carry SACK blocks.
	for _, name := range []string{"pilot-2", "pilot-5"} {
		t.Run(name, func(t *testing.T) {
			p := newPair(t, preset(t, name), tcp.Options{}, tcp.Options{}, 1)
			var c segmentCheck
			p.Wire.SetTrace(c.see)
			echo(t, p, 1<<20, 600*time.Second)
			p.Wire.SetTrace(nil)
			errsA := counter(p.A.Counters(), "tcp.checksum-errors")
			errsB := counter(p.B.Counters(), "tcp.checksum-errors")
			if c.frags != 0 || c.bad != 0 || errsA != 0 || errsB != 0 {
				t.Errorf("of %d frames sent, %d IP fragments and %d bad checksums (first %s); checksum errors counted A %d, B %d",
					c.n, c.frags, c.bad, c.first, errsA, errsB)
			}
		})
	}
}
