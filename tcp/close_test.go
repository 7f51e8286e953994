package tcp_test

import (
	"io"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/waiter"

	"github.com/netramp/netramp/tcp"
)

func TestFinInEstablishedMovesToCloseWaitAndReadsEOF(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	c.send(header.TCPFlagAck|header.TCPFlagPsh|header.TCPFlagFin, []byte("bye"))
	a := h.one()
	if a.ack != c.peerNxt {
		t.Fatalf("FIN acked at %d, want %d", a.ack, c.peerNxt)
	}
	c.wantState(t, tcp.StateCloseWait)
	if b, _ := c.read(t); string(b) != "bye" {
		t.Fatalf("read %q", b)
	}
	if _, err := c.read(t); err == nil {
		t.Fatal("no EOF after FIN")
	} else if _, ok := err.(*tcpip.ErrClosedForReceive); !ok {
		t.Fatalf("read after FIN: %v, want ErrClosedForReceive", err)
	}
	// Our close sends FIN (LAST-ACK); its ACK closes.
	c.ep.Close()
	f := h.one()
	if !f.has(header.TCPFlagFin) || f.seq != c.hostNxt {
		t.Fatalf("want FIN at %d, got %+v", c.hostNxt, f)
	}
	c.wantState(t, tcp.StateLastAck)
	c.hostNxt++
	c.send(header.TCPFlagAck, nil)
	c.wantState(t, tcp.StateClosed)
}

func TestActiveCloseGoesThroughFinWaitToTimeWait(t *testing.T) {
	h := newSegHarness(t, tcp.Options{TimeWait: 2 * time.Second})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	c.ep.Shutdown(tcpip.ShutdownWrite)
	f := h.one()
	if !f.has(header.TCPFlagFin) {
		t.Fatalf("no FIN: %+v", f)
	}
	c.wantState(t, tcp.StateFinWait1)
	c.hostNxt++
	c.send(header.TCPFlagAck, nil)
	c.wantState(t, tcp.StateFinWait2)
	c.send(header.TCPFlagAck|header.TCPFlagFin, nil)
	if a := h.one(); a.ack != c.peerNxt {
		t.Fatalf("FIN not acked: %+v", a)
	}
	c.wantState(t, tcp.StateTimeWait)
	h.clk.RunFor(3 * time.Second)
	if s := tcp.State(c.ep.State()); s != tcp.StateClosed {
		t.Fatalf("state %v after 2·MSL, want CLOSED", s)
	}
}

func TestSimultaneousCloseGoesThroughClosing(t *testing.T) {
	h := newSegHarness(t, tcp.Options{TimeWait: time.Second})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	c.ep.Shutdown(tcpip.ShutdownWrite)
	h.one() // our FIN
	// The peer's FIN crosses ours (it does not ack our FIN).
	c.send(header.TCPFlagAck|header.TCPFlagFin, nil)
	h.one()
	c.wantState(t, tcp.StateClosing)
	c.hostNxt++
	c.send(header.TCPFlagAck, nil)
	c.wantState(t, tcp.StateTimeWait)
}

func TestZeroLingerCloseSendsRST(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	c.ep.SocketOptions().SetLinger(tcpip.LingerOption{Enabled: true, Timeout: 0})
	c.ep.Close()
	r := h.one()
	if !r.has(header.TCPFlagRst) || r.seq != c.hostNxt {
		t.Fatalf("want RST at %d on a zero-linger close, got %+v", c.hostNxt, r)
	}
}

func TestCloseWithUnreadDataSendsRST(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	c.send(header.TCPFlagAck|header.TCPFlagPsh, []byte("unread"))
	h.out()
	c.ep.Close()
	if r := h.one(); !r.has(header.TCPFlagRst) {
		t.Fatalf("want RST when closing with unread data (RFC 9293 §3.10.4), got %+v", r)
	}
}

// holdTimeWait closes the connection from the host's side first; the peer's
// FIN acknowledges the host's, so the host holds TIME-WAIT.
func (c *conn) holdTimeWait(t *testing.T) {
	t.Helper()
	c.ep.Shutdown(tcpip.ShutdownWrite)
	c.h.one()
	c.hostNxt++
	c.send(header.TCPFlagAck|header.TCPFlagFin, nil)
	c.h.out()
	c.wantState(t, tcp.StateTimeWait)
}

func TestRSTInTimeWaitIsIgnored(t *testing.T) {
	h := newSegHarness(t, tcp.Options{TimeWait: 10 * time.Second})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	c.holdTimeWait(t)
	h.inject(pseg{srcPort: peerPort, dstPort: 80, seq: c.peerNxt, flags: header.TCPFlagRst})
	if tcp.State(c.ep.State()) != tcp.StateTimeWait {
		t.Fatal("a RST ended TIME-WAIT (RFC 1337)")
	}
}

func TestClosingListenerResetsConnectionsNotYetAccepted(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	l, _ := h.listen(80, 8)
	h.inject(pseg{srcPort: 30001, dstPort: 80, seq: 10, flags: header.TCPFlagSyn, wnd: 65535, opts: synOptions(1460, -1, false, false, 0)})
	sa := h.one()
	h.inject(pseg{srcPort: 30001, dstPort: 80, seq: 11, ack: sa.seq + 1, flags: header.TCPFlagAck, wnd: 65535})
	h.inject(pseg{srcPort: 30002, dstPort: 80, seq: 10, flags: header.TCPFlagSyn, wnd: 65535, opts: synOptions(1460, -1, false, false, 0)})
	h.out()
	l.Close()
	rsts := map[uint16]bool{}
	for _, s := range h.out() {
		if s.has(header.TCPFlagRst) {
			rsts[s.dstPort] = true
		}
	}
	if !rsts[30001] || !rsts[30002] {
		t.Fatalf("RSTs to %v, want both the queued and the half-open connection", rsts)
	}
}

func TestNewSYNAboveTheOldSequenceEndsTimeWait(t *testing.T) {
	h := newSegHarness(t, tcp.Options{TimeWait: time.Minute})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	c.holdTimeWait(t)
	// The peer reuses its port at once with a higher sequence number.
	h.inject(pseg{srcPort: peerPort, dstPort: 80, seq: c.peerNxt + 100000, flags: header.TCPFlagSyn, wnd: 65535,
		opts: synOptions(1460, 7, true, false, 0)})
	sa := h.one()
	if !sa.has(header.TCPFlagSyn|header.TCPFlagAck) || sa.ack != c.peerNxt+100001 {
		t.Fatalf("want a SYN-ACK from the listener, got %+v", sa)
	}
	if tcp.State(c.ep.State()) != tcp.StateClosed {
		t.Fatalf("old incarnation still %v", tcp.State(c.ep.State()))
	}
}

func TestAbortResetsAndFailsLaterCalls(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	c.ep.Abort()
	if r := h.one(); !r.has(header.TCPFlagRst) {
		t.Fatalf("Abort sent %+v, want RST", r)
	}
	var r bytesReader
	if _, err := c.ep.Write(&r, tcpip.WriteOptions{}); err == nil {
		t.Fatal("Write after Abort succeeded")
	}
}

func TestKeepaliveProbesAnIdleConnectionThenGivesUp(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	idle := tcpip.KeepaliveIdleOption(10 * time.Second)
	intvl := tcpip.KeepaliveIntervalOption(time.Second)
	c.ep.SetSockOpt(&idle)
	c.ep.SetSockOpt(&intvl)
	c.ep.SetSockOptInt(tcpip.KeepaliveCountOption, 3)
	c.ep.SocketOptions().SetKeepAlive(true)
	h.clk.RunFor(9 * time.Second)
	h.none()
	h.clk.RunFor(1500 * time.Millisecond)
	p := h.one()
	if p.seq != c.hostNxt-1 || len(p.payload) != 0 {
		t.Fatalf("keepalive %+v, want an empty segment at SND.NXT-1", p)
	}
	// An answer restarts the idle time.
	c.send(header.TCPFlagAck, nil)
	h.clk.RunFor(9 * time.Second)
	h.none()
	// No answers: 3 probes, then a reset.
	h.clk.RunFor(6 * time.Second)
	segs := h.out()
	if len(segs) < 4 || !segs[len(segs)-1].has(header.TCPFlagRst) {
		t.Fatalf("want 3 probes then RST, got %d segments: %+v", len(segs), segs)
	}
	if tcp.State(c.ep.State()) != tcp.StateClosed {
		t.Fatal("connection survived unanswered keepalives")
	}
}

func TestUserTimeoutEndsAnUnansweredConnectionEarly(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	c := h.accept(80, synOptions(1460, 7, true, false, 0))
	ut := tcpip.TCPUserTimeoutOption(5 * time.Second)
	if err := c.ep.SetSockOpt(&ut); err != nil {
		t.Fatal(err)
	}
	c.wantGiveUp(t, 4*time.Second, 12*time.Second) // a 5 s user timeout
}

// TestCloseWakesAReaderWaitingForData: Close ends the read side, so a Read
// waiting for data in another goroutine must be told, as Shutdown(
// ShutdownRead) tells it: gVisor's gonet adapter waits for ReadableEvents,
// and without the notification its Read over our TCP stayed blocked after
// Close for good. Covered: the graceful close of ESTABLISHED, and a close
// after our own FIN (FIN-WAIT-1, the default branch).
func TestCloseWakesAReaderWaitingForData(t *testing.T) {
	for _, finFirst := range []bool{false, true} {
		h := newSegHarness(t, tcp.Options{})
		c := h.accept(80, synOptions(1460, 7, true, false, 0))
		if finFirst {
			c.ep.Shutdown(tcpip.ShutdownWrite)
			c.wantState(t, tcp.StateFinWait1)
		}
		if _, err := c.ep.Read(io.Discard, tcpip.ReadOptions{}); err == nil {
			t.Fatal("a Read with no data returned no error")
		} else if _, ok := err.(*tcpip.ErrWouldBlock); !ok {
			t.Fatalf("a Read with no data: %v, want ErrWouldBlock", err)
		}
		e, ch := waiter.NewChannelEntry(waiter.ReadableEvents)
		c.wq.EventRegister(&e)
		c.ep.Close()
		c.wq.EventUnregister(&e)
		select {
		case <-ch:
		default:
			t.Fatalf("FIN first %v: Close did not tell a reader waiting for ReadableEvents", finFirst)
		}
		if _, err := c.ep.Read(io.Discard, tcpip.ReadOptions{}); err == nil {
			t.Fatal("a Read after Close returned no error")
		} else if _, ok := err.(*tcpip.ErrWouldBlock); ok {
			t.Fatalf("FIN first %v: a Read after Close would still wait", finFirst)
		}
	}
}
