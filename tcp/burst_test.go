package tcp_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/header"

	"github.com/netramp/netramp/tcp"
)

// burstConn is an accepted connection on a harness whose link reports
// bursts, with SACK and no timestamps.
func burstConn(t *testing.T) (*segHarness, *conn) {
	t.Helper()
	h := newSegHarness(t, tcp.Options{})
	return h, h.accept(80, synOptions(1460, 7, true, false, 0))
}

// capSegs is the most full 1460-byte segments one held ACK covers on a
// fresh connection: a quarter of its 128 KB receive buffer, under the 64 KB
// the cap allows once autotuning has grown the buffer (coalesceCap).
const capSegs = 128 << 10 / 4 / 1460

// sendHeld sends n full 1460-byte segments into an open burst and checks
// that only each capN-th drew an ACK, of everything so far.
func sendHeld(t *testing.T, h *segHarness, c *conn, n, capN int) {
	t.Helper()
	for i := 1; i <= n; i++ {
		c.send(header.TCPFlagAck, make([]byte, 1460))
		out := h.out()
		if i%capN == 0 {
			if len(out) != 1 || out[0].ack != c.peerNxt {
				t.Fatalf("segment %d: sent %+v, want the cap's ACK of %d", i, out, c.peerNxt)
			}
		} else if len(out) != 0 {
			t.Fatalf("segment %d of the burst: sent %+v before its end", i, out)
		}
	}
}

// TestBurstIsAckedAtItsEndAndAtEachCap: n full segments delivered as one
// burst get no ACK while it lasts but one at each cap's worth of segments
// (22 here), and one ACK of them all at its end: ceil(n/22) ACKs where
// every second segment would have drawn n/2 (coalesce.go's departure from
// RFC 5681 §4.2).
func TestBurstIsAckedAtItsEndAndAtEachCap(t *testing.T) {
	for _, n := range []int{2, 3, 8, 16, 20, 22, 24, 46} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			h, c := burstConn(t)
			first := c.peerNxt
			h.link.BeginBurst()
			sendHeld(t, h, c, n, capSegs)
			h.link.EndBurst()
			out := h.out()
			switch {
			case n%capSegs == 0 && len(out) != 0:
				t.Fatalf("burst end: sent %+v, want nothing (the cap's ACK covered all)", out)
			case n%capSegs != 0 && (len(out) != 1 || out[0].ack != c.peerNxt || len(out[0].payload) != 0):
				t.Fatalf("burst end: sent %+v, want one pure ACK of %d (first %d)", out, c.peerNxt, first)
			}
			want := uint64((n + capSegs - 1) / capSegs)
			got := h.count("tcp.acks.sent.burst-end") + h.count("tcp.acks.sent.every-second")
			if got != want {
				t.Errorf("pure ACKs = %d, want %d", got, want)
			}
			if h.count("tcp.acks.sent.burst-end") != uint64(min(n%capSegs, 1)) {
				t.Errorf("tcp.acks.sent.burst-end = %d, want %d", h.count("tcp.acks.sent.burst-end"), min(n%capSegs, 1))
			}
		})
	}
}

// TestBurstWithOneSegmentLeavesItToTheDelayedAck: a burst of one segment
// holds nothing, so its end sends nothing: the segment waits for its pair
// or the delayed-ACK timer, as it would outside a burst.
func TestBurstWithOneSegmentLeavesItToTheDelayedAck(t *testing.T) {
	h, c := burstConn(t)
	h.link.BeginBurst()
	c.send(header.TCPFlagAck, make([]byte, 1460))
	h.link.EndBurst()
	h.none()
	h.clk.RunFor(tcp.DefaultDelayedAck)
	if out := h.out(); len(out) != 1 || out[0].ack != c.peerNxt || h.count("tcp.acks.sent.delayed") != 1 {
		t.Fatalf("sent %+v (delayed %d), want the delayed ACK of %d", out, h.count("tcp.acks.sent.delayed"), c.peerNxt)
	}
}

// TestBurstStillAcksOutOfOrderShortAndFinAtOnce: inside a burst only the
// every-second ACK is held; data above a hole, the segment that fills it, a
// short segment and a FIN are each ACKed at once.
func TestBurstStillAcksOutOfOrderShortAndFinAtOnce(t *testing.T) {
	h, c := burstConn(t)
	full := make([]byte, 1460)
	h.link.BeginBurst()
	defer h.link.EndBurst()
	c.send(header.TCPFlagAck, full)
	c.send(header.TCPFlagAck, full)
	h.none() // held
	// Above a hole: ACK at once, with SACK.
	h.inject(pseg{srcPort: peerPort, dstPort: 80, seq: c.peerNxt + 1460, ack: c.hostNxt, flags: header.TCPFlagAck,
		wnd: 65535, payload: full})
	if out := h.out(); len(out) != 1 || out[0].ack != c.peerNxt || len(out[0].tcpOpts().SACKBlocks) != 1 {
		t.Fatalf("out of order: sent %+v, want one ACK of %d with a SACK block", out, c.peerNxt)
	}
	steps := []struct {
		name   string
		reason string
		do     func()
	}{
		{"hole filled", "hole-filled", func() { c.send(header.TCPFlagAck, full); c.peerNxt += 1460 }},
		{"short", "short", func() { c.send(header.TCPFlagAck, make([]byte, 100)) }},
		{"fin", "fin", func() { c.send(header.TCPFlagAck|header.TCPFlagFin, nil) }},
	}
	for _, s := range steps {
		before := h.count("tcp.acks.sent." + s.reason)
		s.do()
		if out := h.out(); len(out) != 1 || out[0].ack != c.peerNxt {
			t.Fatalf("%s: sent %+v, want one ACK of %d at once", s.name, out, c.peerNxt)
		}
		if h.count("tcp.acks.sent."+s.reason) != before+1 {
			t.Errorf("%s: not counted as tcp.acks.sent.%s", s.name, s.reason)
		}
	}
}

// TestBurstNeverEndedAcksWithinTheDelayedAckTime: a link that begins a
// burst and never ends it stalls nothing: the cap still ACKs each cap's
// worth of segments and the delayed-ACK timer the rest.
func TestBurstNeverEndedAcksWithinTheDelayedAckTime(t *testing.T) {
	h, c := burstConn(t)
	h.link.BeginBurst()
	for range capSegs + 4 {
		c.send(header.TCPFlagAck, make([]byte, 1460))
	}
	if out := h.out(); len(out) != 1 || out[0].ack != c.peerNxt-4*1460 {
		t.Fatalf("sent %+v, want the cap's ACK of the first %d segments", out, capSegs)
	}
	h.clk.RunFor(tcp.DefaultDelayedAck - time.Millisecond)
	h.none()
	h.clk.RunFor(time.Millisecond)
	if out := h.out(); len(out) != 1 || out[0].ack != c.peerNxt {
		t.Fatalf("sent %+v, want the delayed ACK of all (%d)", out, c.peerNxt)
	}
	h.link.EndBurst() // late: nothing is held any more
	h.none()
}

// TestBurstEndAnswersHoldsOfEveryGoroutine: goroutines delivering into one
// NIC at once, some in bursts and one not, each on its own connection:
// when all have returned every connection is ACKed to its last byte with
// no timer run, so no hold outlived the bursts (run it with -race).
func TestBurstEndAnswersHoldsOfEveryGoroutine(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	const conns, bursts, segs = 4, 12, 5 // 88 KB a connection: within its first window
	cs := make([]*conn, conns)
	for i := range cs {
		cs[i] = h.accept(uint16(80+i), synOptions(1460, 7, true, false, 0))
	}
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Go(func() {
			for range bursts {
				inBurst := i > 0 // connection 0's segments come outside any burst
				if inBurst {
					h.link.BeginBurst()
				}
				for range segs {
					c.send(header.TCPFlagAck, make([]byte, 1460))
				}
				if inBurst {
					h.link.EndBurst()
				}
			}
		})
	}
	wg.Wait()
	acked := map[uint16]uint32{}
	for _, s := range h.out() {
		// Another goroutine's burst end may write a connection's ACK
		// alongside its own goroutine: take the highest, not the last.
		if a, ok := acked[s.srcPort]; !ok || int32(s.ack-a) > 0 {
			acked[s.srcPort] = s.ack
		}
	}
	for i, c := range cs {
		if acked[c.port] != c.peerNxt {
			t.Errorf("connection %d: last ACK %d, want %d", i, acked[c.port], c.peerNxt)
		}
	}
	if n := h.count("tcp.acks.sent.delayed"); n != 0 {
		t.Errorf("tcp.acks.sent.delayed = %d with no time passed", n)
	}
}

// txLog is a TxBatch that logs its opens and closes.
type txLog struct {
	mu     sync.Mutex
	n      int
	events []string
}

// txTok is a txLog batch's token.
type txTok struct{ n int }

func (*txTok) KUID() uint32 { return 0 }
func (*txTok) KGID() uint32 { return 0 }

func (l *txLog) OpenBatch() tcp.TxToken {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	l.events = append(l.events, fmt.Sprint("open", l.n))
	return &txTok{l.n}
}

func (l *txLog) CloseBatch(tok tcp.TxToken) {
	l.mu.Lock()
	l.events = append(l.events, fmt.Sprint("close", tok.(*txTok).n))
	l.mu.Unlock()
}

// TestBurstEndAcksOfSeveralEndpointsGoInTheirOwnBatches: where the NIC
// gathers writes (tcp.TxBatch), the ACKs two endpoints held for one burst
// go each in its own endpoint's batch, neither held for the other's (a
// batch belongs to one connection's send opportunity).
func TestBurstEndAcksOfSeveralEndpointsGoInTheirOwnBatches(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	c1 := h.accept(80, synOptions(1460, 7, true, false, 0))
	c2 := h.accept(81, synOptions(1460, 7, true, false, 0))
	tx := &txLog{}
	if !tcp.SetTxBatch(h.s.Gvisor(), 1, tx) {
		t.Fatal("SetTxBatch: not our TCP")
	}
	h.link.BeginBurst()
	for _, c := range []*conn{c1, c2, c1, c2, c1, c2} {
		c.send(header.TCPFlagAck, make([]byte, 1460))
	}
	tx.events = nil // the segments' arrival wrote nothing; start from the end
	h.link.EndBurst()
	want := "[open1 close1 open2 close2]"
	if got := fmt.Sprint(tx.events); got != want {
		t.Errorf("batches at the burst's end: %s, want %s", got, want)
	}
	if n := len(h.out()); n != 2 {
		t.Errorf("burst end sent %d segments, want one ACK each of 2 endpoints", n)
	}
}
