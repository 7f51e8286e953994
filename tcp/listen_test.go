package tcp_test

import (
	"bytes"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	gstack "gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netramp/netramp/tcp"
)

// handshake is a passive open in progress from the scripted peer: its SYN
// sent, the host's SYN-ACK read back.
type handshake struct {
	h        *segHarness
	l        tcpip.Endpoint
	irs, iss uint32 // the peer's ISN and the host's (or its cookie)
	hostTS   uint32 // the SYN-ACK's TSval
}

// startHandshake listens on port 80 with a SYN queue of 8, fills that queue
// first when cookie is set, and sends the peer's SYN with opts.
func startHandshake(t *testing.T, h *segHarness, cookie bool, opts []byte) *handshake {
	t.Helper()
	l, _ := h.listen(80, 8)
	if cookie {
		h.sendSYNs(80, 8)
		h.out()
	}
	const irs = 7000
	h.inject(pseg{srcPort: peerPort, dstPort: 80, seq: irs, flags: header.TCPFlagSyn, wnd: 65535, opts: opts})
	sa := h.one()
	if !sa.has(header.TCPFlagSyn|header.TCPFlagAck) || sa.ack != irs+1 {
		t.Fatalf("not a SYN-ACK of the SYN: %+v", sa)
	}
	if got := h.count("tcp.syn-cookies.sent") == 1; got != cookie {
		t.Fatalf("cookie sent: %v, want %v", got, cookie)
	}
	return &handshake{h: h, l: l, irs: irs, iss: sa.seq, hostTS: sa.synOpts().TSVal}
}

// seg is the peer's segment at offset off past its SYN, acknowledging the
// host's SYN.
func (hs *handshake) seg(off uint32, flags header.TCPFlags, payload []byte) pseg {
	return pseg{srcPort: peerPort, dstPort: 80, seq: hs.irs + 1 + off, ack: hs.iss + 1, flags: flags, wnd: 65535,
		payload: payload}
}

// toListener hands s to the listener endpoint itself, as the demuxer does
// for a segment it dispatched before the child was registered.
func (hs *handshake) toListener(s pseg) {
	pkt := parsed(s)
	defer pkt.DecRef()
	pkt.NICID = 1
	id := gstack.TransportEndpointID{
		LocalPort: 80, LocalAddress: tcpip.AddrFromSlice(hostAddr.AsSlice()),
		RemotePort: peerPort, RemoteAddress: tcpip.AddrFromSlice(peerAddr.AsSlice()),
	}
	hs.l.(gstack.TransportEndpoint).HandlePacket(id, pkt)
}

// noRST fails the test if the host sent a RST since the last read.
func noRST(t *testing.T, h *segHarness, what string) {
	t.Helper()
	for _, s := range h.out() {
		if s.has(header.TCPFlagRst) {
			t.Fatalf("%s: the host sent a RST: %+v", what, s)
		}
	}
}

// readAll reads what ep holds, failing the test on an error.
func readAll(t *testing.T, ep tcpip.Endpoint) []byte {
	t.Helper()
	var b bytes.Buffer
	if _, err := ep.Read(&b, tcpip.ReadOptions{}); err != nil {
		t.Fatalf("read: %v", err)
	}
	return b.Bytes()
}

// TestDataAfterFinalAckReachesTheChild: a data segment that the demuxer gave
// the listener just before the final ACK, on another goroutine, made and
// registered the child, reaches the child (accepted yet or not, made from a
// request or from a cookie) and is not answered with a RST. The interleaving
// is made deterministic by handing the segment to the listener endpoint
// itself once the ACK has established the child.
func TestDataAfterFinalAckReachesTheChild(t *testing.T) {
	for _, tc := range []struct {
		name             string
		cookie, accepted bool
	}{
		{"request, not accepted", false, false},
		{"request, accepted", false, true},
		{"cookie, not accepted", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newSegHarness(t, tcp.Options{})
			hs := startHandshake(t, h, tc.cookie, synOptions(1460, 7, true, false, 0))
			h.inject(hs.seg(0, header.TCPFlagAck, nil))
			var ep tcpip.Endpoint
			var err tcpip.Error
			if tc.accepted {
				if ep, _, err = hs.l.Accept(nil); err != nil {
					t.Fatalf("accept: %v", err)
				}
			}
			resets := h.count("tcp.resets.sent")
			want := []byte("behind the final ACK")
			hs.toListener(hs.seg(0, header.TCPFlagAck|header.TCPFlagPsh, want))
			noRST(t, h, "data behind the final ACK")
			if h.count("tcp.resets.sent") != resets {
				t.Fatal("a RST was counted")
			}
			if !tc.accepted {
				if ep, _, err = hs.l.Accept(nil); err != nil {
					t.Fatalf("accept: %v", err)
				}
			}
			if got := readAll(t, ep); !bytes.Equal(got, want) {
				t.Fatalf("child read %q, want %q", got, want)
			}
		})
	}
}

// TestDataInPlaceOfTheFinalAckCompletesTheHandshake: when the final ACK is
// lost, the peer's first data segment (ACK set, at ISN+1) completes the
// handshake (RFC 9293 §3.10.7.4: any acceptable ACK), for a request and for
// a cookie alike, and its bytes are the child's. A cookie is checked against
// SEG.SEQ-1, so a later segment, the first one lost as well, cannot complete
// it (RFC 4987 §3.6) and gets a RST.
func TestDataInPlaceOfTheFinalAckCompletesTheHandshake(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cookie bool
		off    uint32 // the data segment's offset past the SYN
		ok     bool
	}{
		{"request", false, 0, true},
		{"cookie", true, 0, true},
		{"cookie, a later segment", true, 1000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newSegHarness(t, tcp.Options{})
			hs := startHandshake(t, h, tc.cookie, synOptions(1460, 7, true, false, 0))
			want := []byte("in place of the final ACK")
			h.inject(hs.seg(tc.off, header.TCPFlagAck|header.TCPFlagPsh, want))
			ep, _, err := hs.l.Accept(nil)
			if !tc.ok {
				if err == nil {
					t.Fatal("a later segment completed a cookie's handshake")
				}
				if r := h.one(); !r.has(header.TCPFlagRst) {
					t.Fatalf("a later segment to a cookie: %+v, want a RST", r)
				}
				return
			}
			if err != nil {
				t.Fatalf("accept: %v", err)
			}
			noRST(t, h, "data in place of the final ACK")
			if got := readAll(t, ep); !bytes.Equal(got, want) {
				t.Fatalf("child read %q, want %q", got, want)
			}
		})
	}
}

// TestRequestAppliesThePAWSReorderAllowance: a SYN-queue request judges the
// segment that completes the handshake by the endpoint's PAWS rule (paws.go):
// a data segment whose TSval lags the SYN's by less than pawsReorderTicks was
// overtaken on the path and completes the handshake, its bytes delivered; one
// lagging by pawsReorderTicks or more, or a pure ACK that lags at all, is
// dropped and counted, and no connection is made.
func TestRequestAppliesThePAWSReorderAllowance(t *testing.T) {
	const synTS = 100_000
	for _, tc := range []struct {
		name    string
		lag     uint32
		payload []byte
		ok      bool
	}{
		{"data lagging 3 ticks", 3, []byte("overtaken"), true},
		{"data lagging the allowance", tcp.PawsReorderTicks, []byte("overtaken"), false},
		{"pure ACK lagging 3 ticks", 3, nil, false},
		{"pure ACK not lagging", 0, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newSegHarness(t, tcp.Options{})
			hs := startHandshake(t, h, false, synOptions(1460, 7, true, true, synTS))
			s := hs.seg(0, header.TCPFlagAck, tc.payload)
			s.opts = tsOption(synTS-tc.lag, hs.hostTS)
			drops := h.count("tcp.drops.paws")
			h.inject(s)
			ep, _, err := hs.l.Accept(nil)
			if !tc.ok {
				if err == nil {
					t.Fatal("the lagging segment completed the handshake")
				}
				if h.count("tcp.drops.paws") != drops+1 {
					t.Fatal("the lagging segment was not counted as a PAWS drop")
				}
				return
			}
			if err != nil {
				t.Fatalf("accept: %v (PAWS drops %d)", err, h.count("tcp.drops.paws")-drops)
			}
			if len(tc.payload) == 0 {
				return
			}
			if got := readAll(t, ep); !bytes.Equal(got, tc.payload) {
				t.Fatalf("child read %q, want %q", got, tc.payload)
			}
		})
	}
}
