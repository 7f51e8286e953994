package stack

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/link/pipe"
	gstack "gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netramp/netramp/cc"
	"github.com/netramp/netramp/tcp"
)

func pipePair(t *testing.T, gv bool) (*Stack, *Stack) {
	return mixedPair(t, gv, gv)
}

// mixedPair joins two stacks by a pipe link; gvA/gvB pick gVisor's TCP.
func mixedPair(t *testing.T, gvA, gvB bool) (*Stack, *Stack) {
	t.Helper()
	la, lb := pipe.New("", "", 1500)
	a, err := New(Options{GVisorTCP: gvA, NICs: []NIC{{Link: la, Addr: netip.MustParsePrefix("198.18.0.1/24")}}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(Options{GVisorTCP: gvB, NICs: []NIC{{Link: lb, Addr: netip.MustParsePrefix("198.18.0.2/24")}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// transfer sends n bytes from a to b over Dial/Listen and checks their hash.
func transfer(t *testing.T, a, b *Stack, n int) {
	t.Helper()
	l, err := b.Listen(netip.MustParseAddrPort("198.18.0.2:5001"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	payload := make([]byte, n)
	for i := range payload {
		payload[i] = byte(i*7 + i>>9)
	}
	want := sha256.Sum256(payload)
	got := make(chan [32]byte, 1)
	errc := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			errc <- err
			return
		}
		defer c.Close()
		h := sha256.New()
		if _, err := io.Copy(h, c); err != nil {
			errc <- err
			return
		}
		var s [32]byte
		copy(s[:], h.Sum(nil))
		got <- s
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := a.Dial(ctx, netip.MustParseAddrPort("198.18.0.2:5001"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(c, bytes.NewReader(payload)); err != nil {
		t.Fatal(err)
	}
	c.Close()
	select {
	case s := <-got:
		if s != want {
			t.Fatalf("sha256 mismatch")
		}
	case err := <-errc:
		t.Fatal(err)
	case <-time.After(20 * time.Second):
		t.Fatal("transfer timed out")
	}
}

func TestGVisorTCPDialListenCarriesBytesIntact(t *testing.T) {
	a, b := pipePair(t, true)
	transfer(t, a, b, 1<<20)
}

func TestOurTCPDialListenCarriesBytesIntact(t *testing.T) {
	a, b := pipePair(t, false)
	transfer(t, a, b, 1<<20)
}

func TestOurTCPInteroperatesWithGVisorTCP(t *testing.T) {
	t.Run("ours-to-gvisor", func(t *testing.T) {
		a, b := mixedPair(t, false, true)
		transfer(t, a, b, 4<<20)
	})
	t.Run("gvisor-to-ours", func(t *testing.T) {
		a, b := mixedPair(t, true, false)
		transfer(t, a, b, 4<<20)
	})
}

func TestDialToClosedPortIsRefused(t *testing.T) {
	a, _ := pipePair(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := a.Dial(ctx, netip.MustParseAddrPort("198.18.0.2:81"))
	if err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("dial to a closed port: %v, want connection refused", err)
	}
}

func TestConnHonoursReadDeadlineAndSeesEOF(t *testing.T) {
	a, b := pipePair(t, false)
	l, err := b.Listen(netip.MustParseAddrPort("198.18.0.2:5002"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	acc := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			acc <- c
		}
	}()
	c, err := a.Dial(context.Background(), netip.MustParseAddrPort("198.18.0.2:5002"))
	if err != nil {
		t.Fatal(err)
	}
	s := <-acc
	c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	buf := make([]byte, 10)
	if _, err := c.Read(buf); err == nil {
		t.Fatal("read with nothing sent returned no error")
	} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("read past deadline: %v, want a timeout", err)
	}
	c.SetReadDeadline(time.Time{})
	if _, err := s.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "hello" {
		t.Fatalf("ReadAll = %q, %v; want hello, EOF", got, err)
	}
	c.Close()
}

// TestSmallSendBufferBlocksWriterWithoutError: a writer far ahead of a slow
// reader waits for room; transient backpressure is never an error.
func TestSmallSendBufferBlocksWriterWithoutError(t *testing.T) {
	la, lb := pipe.New("", "", 1500)
	a, err := New(Options{TCP: tcp.Options{SendBufferMax: 16 << 10, ReceiveBufferMax: 32 << 10},
		NICs: []NIC{{Link: la, Addr: netip.MustParsePrefix("198.18.0.1/24")}}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(Options{TCP: tcp.Options{ReceiveBufferMax: 32 << 10},
		NICs: []NIC{{Link: lb, Addr: netip.MustParsePrefix("198.18.0.2/24")}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	l, err := b.Listen(netip.MustParseAddrPort("198.18.0.2:5003"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	done := make(chan error, 1)
	var got bytes.Buffer
	go func() {
		c, err := l.Accept()
		if err != nil {
			done <- err
			return
		}
		buf := make([]byte, 1000)
		for {
			time.Sleep(time.Millisecond)
			n, err := c.Read(buf)
			got.Write(buf[:n])
			if err == io.EOF {
				done <- nil
				return
			}
			if err != nil {
				done <- err
				return
			}
		}
	}()
	c, err := a.Dial(context.Background(), netip.MustParseAddrPort("198.18.0.2:5003"))
	if err != nil {
		t.Fatal(err)
	}
	payload := bytes.Repeat([]byte("0123456789abcdef"), 16<<10) // 256 KiB
	if n, err := c.Write(payload); err != nil || n != len(payload) {
		t.Fatalf("Write = %d, %v", n, err)
	}
	c.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), payload) {
		t.Fatalf("received %d bytes, want %d intact", got.Len(), len(payload))
	}
}

func TestNewRejectsStackWithoutNICs(t *testing.T) {
	if _, err := New(Options{}); err == nil {
		t.Fatal("New with no NICs succeeded")
	}
}

func TestManyConcurrentConnectionsOverPipe(t *testing.T) {
	a, b := pipePair(t, false)
	l, err := b.Listen(netip.MustParseAddrPort("198.18.0.2:5004"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const conns, size = 50, 64 << 10
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				io.Copy(c, c) // echo
				c.Close()
			}()
		}
	}()
	errc := make(chan error, conns)
	for i := 0; i < conns; i++ {
		go func(i int) {
			c, err := a.Dial(context.Background(), netip.MustParseAddrPort("198.18.0.2:5004"))
			if err != nil {
				errc <- err
				return
			}
			defer c.Close()
			msg := bytes.Repeat([]byte{byte(i)}, size)
			go c.Write(msg)
			got := make([]byte, size)
			if _, err := io.ReadFull(c, got); err != nil {
				errc <- err
				return
			}
			if !bytes.Equal(got, msg) {
				errc <- io.ErrUnexpectedEOF
				return
			}
			errc <- nil
		}(i)
	}
	for i := 0; i < conns; i++ {
		select {
		case err := <-errc:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("connections did not finish")
		}
	}
}

func TestIPv6DialListen(t *testing.T) {
	la, lb := pipe.New("", "", 1500)
	a, err := New(Options{NICs: []NIC{{Link: la, Addr: netip.MustParsePrefix("fd00::1/64")}}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(Options{NICs: []NIC{{Link: lb, Addr: netip.MustParsePrefix("fd00::2/64")}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	l, err := b.Listen(netip.MustParseAddrPort("[fd00::2]:5005"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err == nil {
			c.Write([]byte("over v6"))
			c.Close()
		}
	}()
	c, err := a.Dial(context.Background(), netip.MustParseAddrPort("[fd00::2]:5005"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "over v6" {
		t.Fatalf("ReadAll = %q, %v", got, err)
	}
}

// TestBadOptionsAreErrorsNamingTheField: every caller mistake in Options is an
// ErrBadOptions naming the field, the TCP options included (issue 9 defect 7:
// Arm 7 once built a stack whose first connection panicked).
func TestBadOptionsAreErrorsNamingTheField(t *testing.T) {
	link := func() gstack.LinkEndpoint { l, _ := pipe.New("", "", 1500); return l }
	addr := netip.MustParsePrefix("198.18.0.1/24")
	for _, tc := range []struct {
		want string // "" = valid
		o    Options
	}{
		{"NICs is empty", Options{}},
		{"NICs[0].Link", Options{NICs: []NIC{{Addr: addr}}}},
		{"NICs[0].Addr", Options{NICs: []NIC{{Link: link()}}}},
		{"TCP: tcp: bad options: cc: bad config: Arm", Options{TCP: tcp.Options{Arm: cc.Arm(7)}, NICs: []NIC{{Link: link(), Addr: addr}}}},
		{"TCP: tcp: bad options: cc: bad config: InitialWindow", Options{TCP: tcp.Options{InitialWindow: 100000}, NICs: []NIC{{Link: link(), Addr: addr}}}},
		{"TCP: tcp: bad options: StretchAck", Options{GVisorTCP: true, TCP: tcp.Options{StretchAck: -1}, NICs: []NIC{{Link: link(), Addr: addr}}}},
		{"", Options{NICs: []NIC{{Link: link(), Addr: addr}}}},
		{"", Options{GVisorTCP: true, NICs: []NIC{{Link: link(), Addr: addr}}}},
	} {
		s, err := New(tc.o)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%+v: %v, want a stack", tc.o, err)
			} else {
				s.Close()
			}
			continue
		}
		if !errors.Is(err, ErrBadOptions) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want ErrBadOptions with %q", tc.o, err, tc.want)
		}
	}
}
