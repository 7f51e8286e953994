package stack

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"net/netip"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/link/pipe"
)

func pipePair(t *testing.T, gv bool) (*Stack, *Stack) {
	t.Helper()
	la, lb := pipe.New("", "", 1500)
	a, err := New(Options{GVisorTCP: gv, NICs: []NIC{{Link: la, Addr: netip.MustParsePrefix("198.18.0.1/24")}}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(Options{GVisorTCP: gv, NICs: []NIC{{Link: lb, Addr: netip.MustParsePrefix("198.18.0.2/24")}}})
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

func TestNewRejectsStackWithoutNICs(t *testing.T) {
	if _, err := New(Options{}); err == nil {
		t.Fatal("New with no NICs succeeded")
	}
}
