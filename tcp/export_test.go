package tcp

import (
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// Hooks for the allocation tests (alloc_test.go). Each runs one step of the
// data path under the endpoint's lock and releases what the step queued to
// send without writing it, so that what they measure is this package's work
// per segment, not gVisor's network layer below it.

// BuildSegment builds the first segment of the send queue, full-sized, as
// the sender builds every data segment, and releases it.
func BuildSegment(ep tcpip.Endpoint) {
	e := ep.(*endpoint)
	e.mu.Lock()
	n := uint64(min(e.maxPayload(), e.sbuf.Len()))
	e.sendData(e.sndUna, e.sndUna+n, false, nil, e.now())
	e.dropOutbox()
	e.unlock()
}

// Deliver hands the endpoint one inbound segment as HandlePacket does and
// releases what it answers (ACKs, new data, retransmissions).
func Deliver(ep tcpip.Endpoint, pkt *stack.PacketBuffer) {
	e := ep.(*endpoint)
	s, ok := e.p.parse(pkt, e.rxSum)
	if !ok {
		panic("tcp: Deliver: a malformed segment")
	}
	e.mu.Lock()
	e.handleSegment(&s)
	if e.ackNow != ackNone && e.state.synchronized() {
		e.sendAck(ackNone)
	}
	e.dropOutbox()
	e.unlock()
}

func (e *endpoint) dropOutbox() {
	for i := range e.outbox {
		e.outbox[i].pkt.DecRef()
		e.outbox[i] = outSeg{}
	}
	e.outbox = e.outbox[:0]
	e.outExtra = 0
}

// PawsReorderTicks is how far a reordered data segment's TSval may lag
// TS.Recent and still pass PAWS (paws.go).
const PawsReorderTicks = pawsReorderTicks

// ParseOptions is the inbound option parser of a fresh endpoint.
func ParseOptions(b []byte) header.TCPOptions { return new(endpoint).parseOptions(b) }

// SetChallengeLimit sets the stack-wide challenge-ACK limit per second of
// s's netramp TCP, so a test reaches it with a few connections.
func SetChallengeLimit(s *stack.Stack, perSecond int) {
	p := s.TransportProtocolInstance(ProtocolNumber).(*protocol)
	p.challenges.limit = perSecond
	p.challenges.max = 0
}

// ChecksumValid is the inbound checksum check of parse.
func ChecksumValid(pkt *stack.PacketBuffer) bool {
	hdr := header.TCP(pkt.TransportHeader().Slice())
	data, _ := payloadInPlace(pkt, pkt.Data().Size())
	return checksumValid(pkt, hdr, data, 0)
}

// SndUna is ep's oldest unacknowledged sequence number as the wire gives
// it: a packet wholly before it was acknowledged before the link saw it.
func SndUna(ep tcpip.Endpoint) uint32 {
	e := ep.(*endpoint)
	e.mu.Lock()
	defer e.mu.Unlock()
	return wire(e.iss, e.sndUna)
}

// SendQueueSlices is the bytes ep's send queue holds, view by view: its own
// memory, for tests of where a packet's bytes lie.
func SendQueueSlices(ep tcpip.Endpoint) [][]byte {
	e := ep.(*endpoint)
	e.mu.Lock()
	defer e.mu.Unlock()
	var out [][]byte
	e.sbuf.Slices(func(b []byte) { out = append(out, b) })
	return out
}

// RcvQueueSlices is the bytes ep's receive queue holds, view by view: the
// memory the application's reads will copy from.
func RcvQueueSlices(ep tcpip.Endpoint) [][]byte {
	e := ep.(*endpoint)
	e.mu.Lock()
	defer e.mu.Unlock()
	var w sliceRecorder
	e.rcvq.CopyTo(&w)
	return w
}

type sliceRecorder [][]byte

func (w *sliceRecorder) Write(b []byte) (int, error) {
	*w = append(*w, b)
	return len(b), nil
}

// RcvQueueLen is how many bytes ep holds for the application to read.
func RcvQueueLen(ep tcpip.Endpoint) int {
	e := ep.(*endpoint)
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.rcvq.Len()
}

// RcvBuf is ep's receive buffer as autotuning has grown it so far.
func RcvBuf(ep tcpip.Endpoint) int {
	e := ep.(*endpoint)
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.rcvBuf
}

// HeadersBuilt is how many data segments ep built headers for (gso.go's
// runExtend adds full segments to a GSO run without).
func HeadersBuilt(ep tcpip.Endpoint) uint64 {
	e := ep.(*endpoint)
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.headersBuilt
}

// PaceRates is how many times ep computed arm B's pacing rate (paceWait).
func PaceRates(ep tcpip.Endpoint) uint64 {
	e := ep.(*endpoint)
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.paceRates
}

// GrowRcvBuf grows ep's receive buffer to n, as autotuning would, and
// offers the window in an ACK.
func GrowRcvBuf(ep tcpip.Endpoint, n int) {
	e := ep.(*endpoint)
	e.mu.Lock()
	e.growRcv(n)
	e.sendAck(ackWindow)
	e.unlock()
}
