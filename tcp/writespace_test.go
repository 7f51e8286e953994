package tcp_test

import (
	"bytes"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/waiter"

	"github.com/netramp/netramp/tcp"
)

// TestWritersWakeForAThirdOfTheBuffer: a writer that filled the send queue
// is woken, and the endpoint polls writable, once ACKs have freed at least
// half of what the queue still holds (a third of a full buffer), not at
// every ACK. Each wake then appends a long run to the queue; woken per ACK,
// a writer appended the segment or two one ACK freed into a chunk of its
// own, and under a slow scheduler a third of the segments sent spanned two
// chunks (TestBulkDataSegmentsCarryOnePayloadView under -race).
func TestWritersWakeForAThirdOfTheBuffer(t *testing.T) {
	h := newSegHarness(t, tcp.Options{})
	// An unscaled window of 64 KB keeps the send buffer at its first size
	// (it grows to the peer's window and to twice cwnd).
	c := h.accept(80, synOptions(1460, 0, true, false, 0))
	var r bytes.Reader
	r.Reset(make([]byte, 1<<20))
	n, err := c.ep.Write(&r, tcpip.WriteOptions{})
	if err != nil || n == 0 || n >= 1<<20 {
		t.Fatalf("Write = %d, %v; want the send queue filled short of 1 MB", n, err)
	}
	held := int(n)
	if c.ep.Readiness(waiter.WritableEvents) != 0 {
		t.Fatal("a full send queue polls writable")
	}
	e, ch := waiter.NewChannelEntry(waiter.WritableEvents)
	c.wq.EventRegister(&e)
	defer c.wq.EventUnregister(&e)
	woken := func() bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	// The peer acknowledges one segment at a time; slow start keeps the
	// host sending ahead of the ACKs.
	acks := 0
	for acked := 0; ; {
		h.out()
		c.hostNxt += 1460
		acked += 1460
		c.send(header.TCPFlagAck, nil)
		acks++
		want := acked >= (held-acked)/2 // free (what was acked) against what is still held
		if got := c.ep.Readiness(waiter.WritableEvents) != 0; got != want {
			t.Fatalf("after %d bytes acknowledged of %d queued: writable %v, want %v", acked, held, got, want)
		}
		if got := woken(); got != want {
			t.Fatalf("after %d bytes acknowledged of %d queued: writer woken %v, want %v", acked, held, got, want)
		}
		if want {
			break
		}
	}
	if acks < 10 {
		t.Fatalf("woken after %d ACKs", acks)
	}
}
