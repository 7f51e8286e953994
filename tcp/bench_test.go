package tcp_test

import (
	"context"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/link/pipe"
	gstack "gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netramp/netramp/stack"
	"github.com/netramp/netramp/tcp"
)

// BenchmarkBulkTransfer measures the data path's cost per byte (and its
// allocations, with -benchmem) for one bulk transfer between two stacks of
// one process over an in-memory link, at the two MTUs the CPU bench uses.
func BenchmarkBulkTransfer(b *testing.B) {
	for _, mtu := range []uint32{1500, 9000} {
		b.Run(map[uint32]string{1500: "mtu1500", 9000: "mtu9000"}[mtu], func(b *testing.B) {
			benchTransfer(b, mtu, 16<<20)
		})
	}
}

func benchTransfer(b *testing.B, mtu uint32, n int64) {
	src4 := netip.MustParsePrefix("10.9.0.1/24")
	dst4 := netip.MustParsePrefix("10.9.0.2/24")
	b.SetBytes(n)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		la, lb := pipe.New("", "", mtu)
		src, err := stack.New(stack.Options{NICs: []stack.NIC{{Link: la, Addr: src4}}})
		if err != nil {
			b.Fatal(err)
		}
		dst, err := stack.New(stack.Options{NICs: []stack.NIC{{Link: lb, Addr: dst4}}})
		if err != nil {
			b.Fatal(err)
		}
		ln, err := dst.Listen(netip.AddrPortFrom(dst4.Addr(), 5202))
		if err != nil {
			b.Fatal(err)
		}
		got := drain(ln)
		b.StartTimer()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c, err := src.Dial(ctx, netip.AddrPortFrom(dst4.Addr(), 5202))
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		buf := make([]byte, 64<<10)
		for left := n; left > 0; {
			k := min(int64(len(buf)), left)
			m, err := c.Write(buf[:k])
			if err != nil {
				b.Fatal(err)
			}
			left -= int64(m)
		}
		c.Close()
		if k := <-got; k != n {
			b.Fatalf("%d of %d bytes arrived", k, n)
		}
		b.StopTimer()
		ln.Close()
		src.Close()
		dst.Close()
		b.StartTimer()
	}
}

// benchBatch is how many inbound segments a benchmark prepares at a time,
// with the timer stopped.
const benchBatch = 1024

// BenchmarkReceiveSegment is the receiver's cost per in-order full segment
// with timestamps, read by the application at once: this package alone
// ("package") and with gVisor's NIC, IPv4 and demultiplexer below it and
// the ACKs written to the link ("through-the-stack", alloc_test.go's paths).
func BenchmarkReceiveSegment(b *testing.B) {
	for _, p := range paths {
		b.Run(p.name, func(b *testing.B) {
			h := newSegHarness(b, tcp.Options{})
			c := h.accept(80, synOptions(1460, 7, true, true, 5000))
			const size = 1448
			payload := pattern(0, size)
			buf := make([]byte, 2*size)
			b.SetBytes(size)
			var pkts []*gstack.PacketBuffer
			var w tcpip.SliceWriter
			for i := 0; b.Loop(); i++ {
				if i%benchBatch == 0 {
					b.StopTimer()
					segs := make([]pseg, benchBatch)
					for k := range segs {
						c.peerTS++
						segs[k] = pseg{srcPort: peerPort, dstPort: c.port, seq: c.peerNxt, ack: c.hostNxt,
							flags: header.TCPFlagAck, wnd: 65535, opts: tsOption(c.peerTS, c.hostTS), payload: payload}
						c.peerNxt += size
					}
					pkts = p.prepare(segs)
					b.StartTimer()
				}
				p.deliver(c, pkts[i%benchBatch])
				w = tcpip.SliceWriter(buf)
				if res, err := c.ep.Read(&w, tcpip.ReadOptions{}); err != nil || res.Count != size {
					b.Fatalf("read %d, %v", res.Count, err)
				}
			}
		})
	}
}

// BenchmarkProcessAck is the sender's cost per ACK of two full segments in
// slow start with timestamps, each ACK sending the new segments it allows:
// the ACK's processing and the segments' building, per path as above.
func BenchmarkProcessAck(b *testing.B) {
	for _, p := range paths {
		b.Run(p.name, func(b *testing.B) {
			h := newSegHarness(b, tcp.Options{SendBufferMax: 64 << 20})
			c := h.accept(80, synOptions(1460, 7, true, true, 5000))
			c.wndShift = 7
			const size = 1448
			const batch = 64 // ACKs of what fits the initial send buffer
			chunk := make([]byte, batch*2*size)
			var acks []*gstack.PacketBuffer
			for i := 0; b.Loop(); i++ {
				if i%batch == 0 {
					b.StopTimer()
					c.write(b, chunk)
					segs := make([]pseg, batch)
					for k := range segs {
						c.hostNxt += 2 * size
						c.peerTS++
						segs[k] = pseg{srcPort: peerPort, dstPort: c.port, seq: c.peerNxt, ack: c.hostNxt,
							flags: header.TCPFlagAck, wnd: 65535, opts: tsOption(c.peerTS, c.hostTS)}
					}
					acks = p.prepare(segs)
					b.StartTimer()
				}
				p.deliver(c, acks[i%batch])
			}
			if got := h.count("tcp.drops.bad-ack"); got != 0 {
				b.Fatalf("%d ACKs refused", got)
			}
			if sent, acked := h.count("tcp.sent.bytes"), uint64(b.N)*2*size; sent < acked {
				b.Fatalf("%d bytes sent, %d acked", sent, acked)
			}
		})
	}
}

// drain accepts one connection on ln and reads it to its end; the channel
// gets the bytes read, or -1 if the accept failed.
func drain(ln net.Listener) <-chan int64 {
	got := make(chan int64, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- -1
			return
		}
		n, _ := io.Copy(io.Discard, c)
		c.Close()
		got <- n
	}()
	return got
}
