package hosttests

import (
	"sync"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	gstack "gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netramp/netramp/stack/tcptest"
)

// dropper is a link endpoint between a stack and its wire end that drops
// chosen TCP data segments on their first transmission: the n-th data
// segment sent (counting from 1) is dropped when drop(n) says so. A
// retransmission (a sequence number seen before) passes, unless resends is
// set: the first resends copies of a dropped segment (the same starting
// sequence number) are dropped too.
type dropper struct {
	tcptest.Wrapper
	mu      sync.Mutex
	drop    func(n int) bool
	resends int
	redrop  map[uint32]int // a dropped segment's start → copies still to drop
	n       int
	highest uint32
	seen    bool
	dropped int
}

func newDropper(inner gstack.LinkEndpoint, drop func(n int) bool) *dropper {
	return &dropper{Wrapper: tcptest.Wrapper{LinkEndpoint: inner}, drop: drop}
}

// Dropped is how many segments were dropped.
func (d *dropper) Dropped() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dropped
}

func (d *dropper) decide(pkt *gstack.PacketBuffer) bool {
	var b []byte
	for _, s := range pkt.AsSlices() {
		b = append(b, s...)
	}
	if len(b) < header.IPv4MinimumSize {
		return false
	}
	ip := header.IPv4(b)
	if ip.Protocol() != uint8(header.TCPProtocolNumber) || int(ip.HeaderLength()) > len(b) {
		return false
	}
	tcp := header.TCP(ip.Payload())
	if len(tcp) < header.TCPMinimumSize || int(tcp.DataOffset()) > len(tcp) {
		return false
	}
	plen := len(tcp) - int(tcp.DataOffset())
	if plen == 0 {
		return false
	}
	start := tcp.SequenceNumber()
	end := start + uint32(plen)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.seen && int32(end-d.highest) <= 0 { // a retransmission
		if d.redrop[start] == 0 {
			return false
		}
		d.redrop[start]--
		d.dropped++
		return true
	}
	d.seen, d.highest = true, end
	d.n++
	if d.drop(d.n) {
		d.dropped++
		if d.resends > 0 {
			if d.redrop == nil {
				d.redrop = map[uint32]int{}
			}
			d.redrop[start] = d.resends
		}
		return true
	}
	return false
}

// WritePackets passes every packet on except the dropped ones, which count
// as written.
func (d *dropper) WritePackets(pkts gstack.PacketBufferList) (int, tcpip.Error) {
	done := 0
	for _, pkt := range pkts.AsSlice() {
		if d.decide(pkt) {
			done++
			continue
		}
		var one gstack.PacketBufferList
		one.PushBack(pkt)
		n, err := d.LinkEndpoint.WritePackets(one)
		done += n
		if err != nil {
			return done, err
		}
	}
	return done, nil
}
