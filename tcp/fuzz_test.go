package tcp_test

import (
	"encoding/binary"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"

	"github.com/netramp/netramp/stack/tcptest"
	"github.com/netramp/netramp/stack/vclock"
	"github.com/netramp/netramp/tcp"
)

// The fuzz fzHarness plays the peer by hand through a tcptest.Host: it
// crafts segments, injects them into one of our endpoints, and reads what
// the endpoint sends back. The endpoint is first brought into a chosen
// state by a scripted handshake, then fed the fuzzer's segments.

const (
	fzLocalPort = 80
	fzPeerPort  = tcptest.PeerPort
	fuzzRcvMax  = 64 << 10
)

// fuzzStates are the states the fzHarness can reach before fuzzing.
var fuzzStates = []tcp.State{
	tcp.StateListen, tcp.StateSynSent, tcp.StateEstablished, tcp.StateCloseWait,
	tcp.StateFinWait1, tcp.StateFinWait2, tcp.StateTimeWait, tcp.StateSynRcvd,
}

type fzHarness struct {
	t   testing.TB
	h   *tcptest.Host
	clk *vclock.Clock
	ep  tcpip.Endpoint
	// What the endpoint last told us: its next sequence number to send and
	// the next it expects from us.
	ourNxt, peerNxt uint32
	tsVal           uint32
	sent            int
}

func newFzHarness(t testing.TB) *fzHarness {
	host := tcptest.New(t, tcp.Options{ReceiveBufferMax: fuzzRcvMax, SendBufferMax: 64 << 10})
	ep, _ := host.NewEndpoint()
	return &fzHarness{t: t, h: host, clk: host.Clock, ep: ep}
}

func (h *fzHarness) close() {
	h.ep.Close()
	h.clk.RunFor(3 * time.Minute)
	h.drain()
}

// fzSegment is a segment from the peer with these fields, opts and payload.
func fzSegment(seq, ack uint32, flags header.TCPFlags, wnd uint16, opts, payload []byte) tcptest.Seg {
	return tcptest.Seg{SrcPort: fzPeerPort, DstPort: fzLocalPort, Seq: seq, Ack: ack, Flags: flags, Wnd: wnd,
		Opts: opts, Payload: payload}
}

func (h *fzHarness) inject(s tcptest.Seg) {
	h.h.Inject(s)
	h.sent++
}

// drain reads every packet the endpoint sent, noting its sequence state.
func (h *fzHarness) drain() (flags []header.TCPFlags) {
	for _, s := range h.h.Out() {
		flags = append(flags, s.Flags)
		if end := s.Seq + s.Len(); int32(end-h.ourNxt) > 0 || h.ourNxt == 0 {
			h.ourNxt = end
		}
		if s.Has(header.TCPFlagAck) {
			h.peerNxt = s.Ack
		}
		if o := s.Options(); o.TS {
			h.tsVal = o.TSVal
		}
	}
	return flags
}

func (h *fzHarness) step() {
	h.clk.RunFor(5 * time.Millisecond)
	h.drain()
}

func fzSynAckOptions(tsEcr uint32) []byte {
	return tcptest.SynOptsEcr(1460, 7, true, true, 1000, tsEcr)
}

func fzAckOptions(tsEcr uint32) []byte { return tcptest.TSOpt(2000, tsEcr) }

const fzPeerISN = 5000

// reach drives the endpoint into state st and reports whether it got there.
func (h *fzHarness) reach(st tcp.State) bool {
	ack := header.TCPFlagAck
	switch st {
	case tcp.StateListen, tcp.StateSynRcvd:
		if err := h.ep.Bind(tcpip.FullAddress{Port: fzLocalPort}); err != nil {
			return false
		}
		if err := h.ep.Listen(8); err != nil {
			return false
		}
		if st == tcp.StateSynRcvd {
			// A SYN to the listener: its child waits in SYN-RECEIVED. The
			// fuzzed segments then go to that child (or the listener).
			h.inject(fzSegment(fzPeerISN, 0, header.TCPFlagSyn, 65535, fzSynAckOptions(0), nil))
			h.step()
			h.peerNxt = fzPeerISN + 1
			return h.ourNxt != 0
		}
		h.peerNxt = fzPeerISN
		return true
	}
	if err := h.ep.Bind(tcpip.FullAddress{Port: fzLocalPort}); err != nil {
		return false
	}
	switch e := h.ep.Connect(tcpip.FullAddress{Addr: tcpip.AddrFromSlice(tcptest.PeerAddr.AsSlice()), Port: fzPeerPort}); e.(type) {
	case nil, *tcpip.ErrConnectStarted:
	default:
		return false
	}
	h.step()
	if st == tcp.StateSynSent {
		h.peerNxt = fzPeerISN
		return tcp.State(h.ep.State()) == tcp.StateSynSent
	}
	h.inject(fzSegment(fzPeerISN, h.ourNxt, header.TCPFlagSyn|ack, 65535, fzSynAckOptions(h.tsVal), nil))
	h.step()
	if tcp.State(h.ep.State()) != tcp.StateEstablished {
		return false
	}
	switch st {
	case tcp.StateEstablished:
	case tcp.StateCloseWait:
		h.inject(fzSegment(fzPeerISN+1, h.ourNxt, header.TCPFlagFin|ack, 65535, fzAckOptions(h.tsVal), nil))
		h.step()
	case tcp.StateFinWait1, tcp.StateFinWait2, tcp.StateTimeWait:
		h.ep.Shutdown(tcpip.ShutdownWrite)
		h.step()
		if st != tcp.StateFinWait1 {
			h.inject(fzSegment(fzPeerISN+1, h.ourNxt, ack, 65535, fzAckOptions(h.tsVal), nil))
			h.step()
		}
		if st == tcp.StateTimeWait {
			h.inject(fzSegment(fzPeerISN+1, h.ourNxt, header.TCPFlagFin|ack, 65535, fzAckOptions(h.tsVal), nil))
			h.step()
		}
	}
	return tcp.State(h.ep.State()) == st
}

// feed turns the fuzzer's bytes into segments. Each record is
//
//	mode(1) flags(1) seqDelta(2) ackDelta(2) window(2) optLen(1) payLen(1) opts payload
//
// Deltas are signed and relative to what the endpoint expects (its ACK) and
// has sent (its SND.NXT); mode bit 0 sends the record's bytes raw as the TCP
// header and payload instead, bit 1 leaves a raw fzSegment's checksum wrong.
func (h *fzHarness) feed(in []byte) {
	for len(in) >= 10 {
		mode, flags := in[0], header.TCPFlags(in[1])
		seq := h.peerNxt + uint32(int16(binary.BigEndian.Uint16(in[2:])))
		ack := h.ourNxt + uint32(int16(binary.BigEndian.Uint16(in[4:])))
		wnd := binary.BigEndian.Uint16(in[6:])
		optLen, payLen := int(in[8])%41, int(in[9])
		in = in[10:]
		optLen, payLen = min(optLen, len(in)), min(payLen, max(len(in)-min(optLen, len(in)), 0))
		opts, payload := in[:optLen], in[optLen:optLen+payLen]
		in = in[optLen+payLen:]
		if mode&1 == 1 {
			raw := append(opts, payload...)
			if len(raw) < header.TCPMinimumSize {
				raw = append(raw, make([]byte, header.TCPMinimumSize-len(raw))...)
			}
			th := header.TCP(raw)
			th.SetSourcePort(fzPeerPort)
			th.SetDestinationPort(fzLocalPort)
			h.h.InjectRaw(raw, mode&2 == 0)
			h.sent++
		} else {
			h.inject(fzSegment(seq, ack, flags, wnd, opts, payload))
		}
		if mode&4 != 0 {
			h.clk.RunFor(time.Duration(mode>>3) * 10 * time.Millisecond)
		}
		h.drain()
		// Read whatever arrived, as an application would, sometimes.
		if mode&0x80 != 0 {
			h.ep.Read(fzDiscard{}, tcpip.ReadOptions{})
		}
		if q, err := h.ep.GetSockOptInt(tcpip.ReceiveQueueSizeOption); err == nil && q > fuzzRcvMax+(fuzzRcvMax>>1) {
			h.t.Fatalf("receive queue holds %d bytes, bound %d", q, fuzzRcvMax)
		}
	}
}

type fzDiscard struct{}

func (fzDiscard) Write(p []byte) (int, error) { return len(p), nil }

func fuzzOne(t testing.TB, state byte, in []byte) {
	h := newFzHarness(t)
	defer h.close()
	st := fuzzStates[int(state)%len(fuzzStates)]
	if !h.reach(st) {
		t.Fatalf("fzHarness could not reach %v (endpoint in %v)", st, tcp.State(h.ep.State()))
	}
	h.feed(in)
	// Let every timer run out (retransmissions, keepalive, TIME-WAIT).
	for i := 0; i < 4; i++ {
		h.clk.RunFor(30 * time.Second)
		h.drain()
	}
}

// fzRec builds one feed record.
func fzRec(mode byte, flags header.TCPFlags, seqDelta, ackDelta int16, wnd uint16, opts, payload []byte) []byte {
	b := []byte{mode, byte(flags), 0, 0, 0, 0, 0, 0, byte(len(opts)), byte(len(payload))}
	binary.BigEndian.PutUint16(b[2:], uint16(seqDelta))
	binary.BigEndian.PutUint16(b[4:], uint16(ackDelta))
	binary.BigEndian.PutUint16(b[6:], wnd)
	return append(append(b, opts...), payload...)
}

// FuzzSegmentsInEveryState feeds arbitrary segments to an endpoint in each
// state; it must never panic, hang or hold more than its receive bound. The
// seed corpus runs as a normal test.
func FuzzSegmentsInEveryState(f *testing.F) {
	ack, psh := header.TCPFlagAck, header.TCPFlagPsh
	data := make([]byte, 200)
	for st := range fuzzStates {
		s := byte(st)
		f.Add(s, []byte{})
		f.Add(s, fzRec(0, ack|psh, 0, 0, 65535, nil, data))                                               // in order data
		f.Add(s, fzRec(4, ack|psh, 3000, 0, 65535, nil, data))                                            // out of order
		f.Add(s, append(fzRec(0, ack, 0, 0, 0, nil, nil), fzRec(0, ack, 0, 0, 0, nil, nil)...))           // zero window, dup ACK
		f.Add(s, fzRec(0, header.TCPFlagRst, 0, 0, 0, nil, nil))                                          // in-window RST
		f.Add(s, fzRec(0, header.TCPFlagRst, 100, 0, 0, nil, nil))                                        // RST off the edge
		f.Add(s, fzRec(0, header.TCPFlagSyn, 0, 0, 65535, nil, nil))                                      // SYN in any state
		f.Add(s, fzRec(0, header.TCPFlagSyn|ack, -1, 0, 65535, fzSynAckOptions(1), nil))                  // stray SYN-ACK
		f.Add(s, fzRec(0, header.TCPFlagFin|ack, 0, 0, 65535, nil, data[:10]))                            // data + FIN
		f.Add(s, fzRec(0, ack, 0, 30000, 65535, nil, nil))                                                // ACK of unsent data
		f.Add(s, fzRec(0, ack, 0, -20000, 65535, nil, nil))                                               // very old ACK
		f.Add(s, fzRec(0, ack, 0, 0, 65535, sackOption(1, 2, 0xffffffff, 0, 3, 3, 10, 5), nil))           // hostile SACK blocks
		f.Add(s, fzRec(0, ack, 0, 0, 65535, []byte{8, 10, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}, data[:5])) // PAWS-old timestamp
		f.Add(s, fzRec(0, ack, 0, 0, 65535, []byte{2, 0, 3, 1, 4, 255}, nil))                             // malformed options
		f.Add(s, fzRec(1, 0, 0, 0, 0, []byte{0, 80, 0, 80, 0, 0, 0, 1, 0, 0, 0, 1, 0xf0, 0x12}, nil))     // raw: data offset 60 beyond the fzSegment
		f.Add(s, fzRec(3, 0, 0, 0, 0, make([]byte, 20), data[:3]))                                        // raw, bad checksum
		var flood []byte
		for i := int16(0); i < 60; i++ {
			flood = append(flood, fzRec(0, ack, 2*i+2, 0, 65535, nil, data[:1])...) // one-byte fragments with holes
		}
		f.Add(s, flood)
	}
	f.Fuzz(func(t *testing.T, state byte, in []byte) {
		if len(in) > 1<<16 {
			in = in[:1<<16]
		}
		fuzzOne(t, state, in)
	})
}
