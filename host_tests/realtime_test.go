package hosttests

import (
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"

	"github.com/netramp/netramp/nic/wire"
	"github.com/netramp/netramp/stack"
	"github.com/netramp/netramp/stack/vtest"
	"github.com/netramp/netramp/tcp"
)

// realPair builds two stacks on a wire that runs on the wall clock.
// gvA/gvB select gVisor's own TCP on that side.
func realPair(t *testing.T, cfg wire.Config, a, b tcp.Options, gvA, gvB bool) (*stack.Stack, *stack.Stack, *wire.Wire) {
	t.Helper()
	clk := tcpip.NewStdClock()
	w, err := wire.New(clk, cfg)
	if err != nil {
		t.Fatal(err)
	}
	sa, err := stack.New(stack.Options{TCP: a, GVisorTCP: gvA, Clock: clk,
		NICs: []stack.NIC{{Link: w.A(), Addr: netip.PrefixFrom(vtest.AddrA, 24)}}})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := stack.New(stack.Options{TCP: b, GVisorTCP: gvB, Clock: clk,
		NICs: []stack.NIC{{Link: w.B(), Addr: netip.PrefixFrom(vtest.AddrB, 24)}}})
	if err != nil {
		sa.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { sa.Close(); sb.Close() })
	return sa, sb, w
}

// streamReader is n bytes of seed's stream as an io.Reader.
type streamReader struct {
	s *vtest.Stream
	n int64
}

func (r *streamReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > r.n {
		p = p[:r.n]
	}
	r.s.Read(p)
	r.n -= int64(len(p))
	return len(p), nil
}

type result struct {
	sum [32]byte
	n   int64
	err error
}

// drain reads c to EOF, hashing.
func drain(c net.Conn) result {
	h := sha256.New()
	n, err := io.Copy(h, c)
	var r result
	copy(r.sum[:], h.Sum(nil))
	r.n, r.err = n, err
	return r
}

// connect dials from a to b's listener at port and returns both conns.
func connect(t *testing.T, a, b *stack.Stack, port uint16) (client, server net.Conn) {
	t.Helper()
	l, err := b.Listen(netip.AddrPortFrom(vtest.AddrB, port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	acc := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			close(acc)
			return
		}
		acc <- c
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client, err = a.Dial(ctx, netip.AddrPortFrom(vtest.AddrB, port))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case server = <-acc:
	case <-time.After(10 * time.Second):
		t.Fatal("accept timed out")
	}
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// sendAndCheck writes n bytes of seed's stream on w and closes its write
// side, while r's bytes are hashed; it fails on any error or mismatch and
// returns the wall time.
func sendAndCheck(t *testing.T, w, r net.Conn, n, seed int64, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	got := make(chan result, 1)
	go func() { got <- drain(r) }()
	wrote, err := io.Copy(w, &streamReader{s: vtest.NewStream(seed), n: n})
	if err != nil || wrote != n {
		t.Fatalf("writer: %d of %d bytes, %v", wrote, n, err)
	}
	if cw, ok := w.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	} else {
		w.Close()
	}
	select {
	case res := <-got:
		if res.err != nil || res.n != n {
			t.Fatalf("reader: %d of %d bytes, %v", res.n, n, res.err)
		}
		if res.sum != vtest.StreamHash(seed, n) {
			t.Fatal("SHA-256 of the received bytes differs from the stream sent")
		}
	case <-time.After(limit):
		t.Fatalf("transfer of %s not done within %v", mb(n), limit)
	}
	return time.Since(start)
}

func TestConnWriteBlocksOnAFullSendBufferAndNeverFails(t *testing.T) {
	// A 64 KiB send buffer on a 20 Mbit/s path: Write of 4 MB must block
	// and resume as the buffer drains, and return every byte with no error;
	// an echo server copying the same conn must echo every byte.
	d := wire.Dir{RateBps: 20e6, Delay: 5 * time.Millisecond}
	small := tcp.Options{SendBufferMax: 64 << 10}
	a, b, _ := realPair(t, wire.Config{AtoB: d, BtoA: d, Seed: 1}, small, small, false, false)
	c, s := connect(t, a, b, 7)
	echoErr := make(chan error, 1)
	go func() {
		_, err := io.Copy(s, s)
		if err == nil {
			err = s.(interface{ CloseWrite() error }).CloseWrite()
		}
		echoErr <- err
	}()
	const n = 4 << 20
	wall := sendAndCheck(t, c, c, n, 3, 60*time.Second)
	if err := <-echoErr; err != nil {
		t.Fatalf("echo loop ended with %v: backpressure killed the writer", err)
	}
	t.Logf("echoed %s through a 64 KiB send buffer in %v", mb(n), wall)
}

func TestConnWriteDeadlineExpiresAsATimeoutWithoutLosingAcceptedBytes(t *testing.T) {
	d := wire.Dir{RateBps: 10e6, Delay: 5 * time.Millisecond}
	small := tcp.Options{SendBufferMax: 64 << 10, ReceiveBufferMax: 64 << 10}
	a, b, _ := realPair(t, wire.Config{AtoB: d, BtoA: d, Seed: 1}, small, small, false, false)
	c, s := connect(t, a, b, 8)
	// Nobody reads s: the writer fills both buffers and must time out.
	c.SetWriteDeadline(time.Now().Add(500 * time.Millisecond))
	wrote, err := io.Copy(c, &streamReader{s: vtest.NewStream(4), n: 16 << 20})
	if !errors.Is(err, context.DeadlineExceeded) && !isTimeout(err) {
		t.Fatalf("write ended with %v after %d bytes, want a timeout", err, wrote)
	}
	c.SetWriteDeadline(time.Time{})
	c.(interface{ CloseWrite() error }).CloseWrite()
	res := drain(s)
	if res.err != nil || res.n != wrote {
		t.Fatalf("reader got %d bytes (%v), writer had %d accepted", res.n, res.err, wrote)
	}
	h := sha256.New()
	io.Copy(h, &streamReader{s: vtest.NewStream(4), n: wrote})
	if string(h.Sum(nil)) != string(res.sum[:]) {
		t.Fatal("bytes accepted before the deadline arrived altered")
	}
	t.Logf("timed out after %d bytes accepted; all of them arrived", wrote)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
