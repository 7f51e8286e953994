package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"runtime"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/link/channel"
	"gvisor.dev/gvisor/pkg/tcpip/link/pipe"
	gstack "gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netramp/netramp/stack"
	"github.com/netramp/netramp/stack/vtest"
)

// MemConfig sizes the memory benchmark: Conns connections per case, both
// ends in this process.
type MemConfig struct {
	Conns int
	Cases []MemCase // default: all
}

// MemCase is what each connection holds when the heap is measured.
type MemCase string

// The cases of the memory benchmark.
const (
	MemIdle     MemCase = "idle"         // established, nothing queued
	MemHalfOpen MemCase = "half-open"    // SYN received, SYN-ACK sent, no ACK
	MemUnacked  MemCase = "64KB unacked" // the writer's 64 KB, never acknowledged
	MemUnread   MemCase = "64KB unread"  // 64 KB delivered, not read
	memPayload          = 64 << 10
)

// MemResult is the live heap per connection end for one TCP and case.
type MemResult struct {
	TCP     string
	Case    MemCase
	Conns   int
	Ends    int     // connection ends measured (2 per connection, 1 when half-open)
	PerEnd  float64 // bytes of live heap per end
	HeapAll uint64  // heap growth for all Conns connections
}

// Mem runs each case for this TCP and gVisor's.
func Mem(ctx context.Context, cfg MemConfig) ([]MemResult, error) {
	if cfg.Conns <= 0 {
		return nil, errors.New("bench: mem needs a positive connection count")
	}
	cases := cfg.Cases
	if len(cases) == 0 {
		cases = []MemCase{MemIdle, MemHalfOpen, MemUnacked, MemUnread}
	}
	var out []MemResult
	for _, c := range cases {
		for _, gv := range []bool{false, true} {
			if err := ctx.Err(); err != nil {
				return out, err
			}
			r, err := memCase(ctx, c, cfg.Conns, gv)
			if err != nil {
				return out, err
			}
			out = append(out, r)
		}
	}
	return out, nil
}

func memCase(ctx context.Context, c MemCase, n int, gv bool) (MemResult, error) {
	name := "netramp"
	if gv {
		name = "gVisor"
	}
	r := MemResult{TCP: name, Case: c, Conns: n, Ends: 2}
	var grow uint64
	var err error
	if c == MemHalfOpen {
		r.Ends = 1
		grow, err = memHalfOpen(n, gv)
	} else {
		grow, err = memConnected(ctx, c, n, gv)
	}
	if err != nil {
		return r, fmt.Errorf("bench: mem %s %s: %w", name, c, err)
	}
	r.HeapAll = grow
	r.PerEnd = float64(grow) / float64(n*r.Ends)
	return r, nil
}

// blackhole is a pipe end that drops what it is given to send while on.
type blackhole struct {
	*pipe.Endpoint
	on atomic.Bool
}

func (b *blackhole) WritePackets(pkts gstack.PacketBufferList) (int, tcpip.Error) {
	if b.on.Load() {
		return pkts.Len(), nil
	}
	return b.Endpoint.WritePackets(pkts)
}

// memConnected opens n connections between two stacks, puts each in case c,
// and returns the heap they added.
func memConnected(ctx context.Context, c MemCase, n int, gv bool) (uint64, error) {
	la, lb := pipe.New("", "", 1500)
	bh := &blackhole{Endpoint: la}
	src, err := stack.New(stack.Options{GVisorTCP: gv, NICs: []stack.NIC{{Link: bh, Addr: sourcePrefix}}})
	if err != nil {
		return 0, err
	}
	defer src.Close()
	dst, err := stack.New(stack.Options{GVisorTCP: gv, NICs: []stack.NIC{{Link: lb, Addr: sinkPrefix}}})
	if err != nil {
		return 0, err
	}
	defer dst.Close()
	ln, err := dst.Listen(netip.AddrPortFrom(sinkPrefix.Addr(), 5203))
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	accepted := make(chan net.Conn, n)
	go func() {
		for {
			a, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- a
		}
	}()
	conns := make([]net.Conn, 0, 2*n)
	defer func() {
		for _, k := range conns {
			k.Close()
		}
	}()
	// Warm up: one connection through every path, so first-use allocations
	// of the stacks are not charged to the n measured.
	if err := memOne(ctx, src, bh, accepted, c, &conns); err != nil {
		return 0, err
	}
	before := vtest.LiveHeap()
	for range n {
		if err := memOne(ctx, src, bh, accepted, c, &conns); err != nil {
			return 0, err
		}
	}
	// gVisor's TCP works on its own goroutines: let it settle.
	time.Sleep(200 * time.Millisecond)
	after := vtest.LiveHeap()
	runtime.KeepAlive(conns)
	if after < before {
		return 0, nil
	}
	return after - before, nil
}

// memOne opens one connection and puts it in case c.
func memOne(ctx context.Context, src *stack.Stack, bh *blackhole, accepted <-chan net.Conn, c MemCase, conns *[]net.Conn) error {
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	k, err := src.Dial(dctx, netip.AddrPortFrom(sinkPrefix.Addr(), 5203))
	cancel()
	if err != nil {
		return err
	}
	var a net.Conn
	select {
	case a = <-accepted:
	case <-time.After(10 * time.Second):
		return errors.New("accept timed out")
	}
	*conns = append(*conns, k, a)
	switch c {
	case MemUnacked:
		// The dialer's link drops the data, so none is acknowledged.
		bh.on.Store(true)
		defer bh.on.Store(false)
		fallthrough
	case MemUnread:
		_, err = k.Write(payload[:])
	}
	return err
}

// payload is what each connection writes; shared, so the bench's own
// buffers are not charged to the connections.
var payload [memPayload]byte

// memHalfOpen sends n SYNs from distinct ports to a listener on a channel
// link that never delivers its SYN-ACKs, and returns the heap they added.
func memHalfOpen(n int, gv bool) (uint64, error) {
	if n > 4000 {
		n = 4000 // the listener's SYN queue bound (gonet's backlog)
	}
	link := channel.New(16, 1500, "")
	dst, err := stack.New(stack.Options{GVisorTCP: gv, NICs: []stack.NIC{{Link: link, Addr: sinkPrefix}}})
	if err != nil {
		return 0, err
	}
	defer dst.Close()
	defer link.Close()
	ln, err := dst.Listen(netip.AddrPortFrom(sinkPrefix.Addr(), 5204))
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	drain := func() {
		for link.Drain() > 0 {
		}
	}
	inject(link, 1000)
	drain()
	before := vtest.LiveHeap()
	for i := range n {
		inject(link, uint16(2000+i))
		if i%8 == 0 {
			drain()
		}
	}
	time.Sleep(200 * time.Millisecond)
	drain()
	after := vtest.LiveHeap()
	runtime.KeepAlive(ln)
	if after < before {
		return 0, nil
	}
	return after - before, nil
}

// inject delivers one SYN (MSS, window scale, SACK, timestamps) from port.
func inject(link *channel.Endpoint, port uint16) {
	src := tcpip.AddrFrom4(sourcePrefix.Addr().As4())
	dst := tcpip.AddrFrom4(sinkPrefix.Addr().As4())
	opts := []byte{
		2, 4, 0x05, 0xb4, // MSS 1460
		1, 3, 3, 7, // NOP, window scale 7
		4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, // SACK-permitted, timestamps
	}
	tcpLen := header.TCPMinimumSize + len(opts)
	b := make([]byte, header.IPv4MinimumSize+tcpLen)
	ip := header.IPv4(b)
	ip.Encode(&header.IPv4Fields{
		TotalLength: uint16(len(b)), TTL: 64, Protocol: uint8(header.TCPProtocolNumber),
		SrcAddr: src, DstAddr: dst,
	})
	ip.SetChecksum(^ip.CalculateChecksum())
	t := header.TCP(b[header.IPv4MinimumSize:])
	t.Encode(&header.TCPFields{
		SrcPort: port, DstPort: 5204, SeqNum: uint32(port) << 16, DataOffset: uint8(tcpLen),
		Flags: header.TCPFlagSyn, WindowSize: 65535,
	})
	copy(t[header.TCPMinimumSize:], opts)
	xsum := header.PseudoHeaderChecksum(header.TCPProtocolNumber, src, dst, uint16(tcpLen))
	t.SetChecksum(^checksum.Checksum(t, xsum))
	pkt := gstack.NewPacketBuffer(gstack.PacketBufferOptions{Payload: buffer.MakeWithData(b)})
	link.InjectInbound(header.IPv4ProtocolNumber, pkt)
	pkt.DecRef()
}

// WriteMem prints the heap per connection end, ours beside gVisor's.
func WriteMem(w io.Writer, rs []MemResult) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "case\tnetramp KiB/end\tgVisor KiB/end\tnetramp/gVisor\tconns")
	byCase := map[MemCase]map[string]MemResult{}
	var order []MemCase
	for _, r := range rs {
		if byCase[r.Case] == nil {
			byCase[r.Case] = map[string]MemResult{}
			order = append(order, r.Case)
		}
		byCase[r.Case][r.TCP] = r
	}
	for _, c := range order {
		a, b := byCase[c]["netramp"], byCase[c]["gVisor"]
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%s\t%d\n", c, a.PerEnd/1024, b.PerEnd/1024, ratio(a.PerEnd, b.PerEnd), max(a.Conns, b.Conns))
	}
	return tw.Flush()
}
