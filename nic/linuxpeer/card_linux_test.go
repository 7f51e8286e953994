//go:build linux

package linuxpeer

import (
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

func TestCardRingRefusesWhenFullAndNotifiesWhenAFrameLeaves(t *testing.T) {
	c := newCard(4, 12e6) // 1500 bytes take 1 ms at 12 Mbit/s
	defer c.close()
	start := time.Now()
	for i := 0; i < 4; i++ {
		if _, ok := c.take(1500); !ok {
			t.Fatalf("frame %d refused by a ring with %d free slots", i, 4-i)
		}
	}
	if _, ok := c.take(1500); ok {
		t.Fatal("a full ring took a fifth frame")
	}
	if f := c.TxFree(); f != 0 {
		t.Fatalf("TxFree %d on a full ring", f)
	}
	fired := make(chan time.Time, 1)
	c.NotifyTxFree(func() { fired <- time.Now() })
	select {
	case at := <-fired:
		if d := at.Sub(start); d < time.Millisecond {
			t.Errorf("room announced after %v, before the first frame left the card (1 ms)", d)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("no notification that room freed up")
	}
	if f := c.TxFree(); f < 1 {
		t.Errorf("TxFree %d after the notification", f)
	}
	time.Sleep(5 * time.Millisecond) // the ring drains
	for i := 0; i < 4; i++ {
		if _, ok := c.take(1500); !ok {
			t.Fatalf("frame %d refused by a drained ring", i)
		}
	}
	cancelled := make(chan struct{}, 1)
	cancel := c.NotifyTxFree(func() { cancelled <- struct{}{} })
	cancel()
	cancel() // safe twice
	time.Sleep(10 * time.Millisecond)
	if len(cancelled) != 0 {
		t.Error("a cancelled waiter ran")
	}
}

func ipPacket(n int) *stack.PacketBuffer {
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(make([]byte, n))})
	pkt.NetworkProtocolNumber = header.IPv4ProtocolNumber
	return pkt
}

func TestLinkRefusesWritesBeyondTheRing(t *testing.T) {
	var a arrivals
	l := newLink(1500, "\x02\x00\x5e\x00\x00\x01", "\x02\x00\x5e\x00\x00\x02")
	l.out = newPipe(Dir{}, 1, 0, false, newBufPool(), a.out)
	defer l.out.close()
	l.card = newCard(4, 12e6)
	defer l.card.close()
	start := time.Now()
	var pkts stack.PacketBufferList
	for i := 0; i < 6; i++ {
		pkts.PushBack(ipPacket(1486))
	}
	n, err := l.WritePackets(pkts)
	pkts.DecRef()
	if n != 4 {
		t.Errorf("wrote %d packets into a 4-slot ring, want 4", n)
	}
	if _, ok := err.(*tcpip.ErrNoBufferSpace); !ok {
		t.Errorf("error %v, want ErrNoBufferSpace", err)
	}
	if got := l.ringFull.Load(); got != 2 {
		t.Errorf("%d refusals counted, want 2", got)
	}
	// Frames leave the card 1 ms apart at the line rate; lateness only
	// delays them further.
	for i, at := range a.wait(t, 4, 2*time.Second) {
		if min := time.Duration(i+1) * time.Millisecond; at.Sub(start) < min {
			t.Errorf("frame %d left after %v, before the 12 Mbit/s line let it (%v)", i, at.Sub(start), min)
		}
	}
}
