package xfer

import (
	"errors"
	"io"
	"net"
	"strings"
	"testing"
)

func pair(t *testing.T, serve func(net.Conn)) net.Conn {
	a, b := net.Pipe()
	go func() { serve(b); b.Close() }()
	t.Cleanup(func() { a.Close() })
	return a
}

func TestPutAndGetAgreeOnSHA256(t *testing.T) {
	const n = 1<<20 + 7
	c := pair(t, func(c net.Conn) { Serve(c) })
	sum, err := Put(c, 5, n)
	if err != nil {
		t.Fatal(err)
	}
	if sum != PatternSum(5, n) {
		t.Fatalf("Put digest %s != PatternSum %s", sum, PatternSum(5, n))
	}
	c = pair(t, func(c net.Conn) { Serve(c) })
	if _, err := Get(c, 9, n); err != nil {
		t.Fatal(err)
	}
}

func TestGetDetectsOneCorruptByte(t *testing.T) {
	const n = 4096
	c := pair(t, func(c net.Conn) {
		buf := make([]byte, 64)
		c.Read(buf)
		data, _ := io.ReadAll(io.LimitReader(Pattern(3), n))
		want := PatternSum(3, n)
		data[1000] ^= 1
		c.Write(data)
		io.WriteString(c, want+" 4096\n")
	})
	if _, err := Get(c, 3, n); err == nil {
		t.Fatal("Get accepted a corrupted stream")
	}
}

func TestPutDetectsShortUpload(t *testing.T) {
	// A sink that hashes one byte less than was sent reports a digest that
	// cannot match.
	c := pair(t, func(c net.Conn) {
		io.CopyN(io.Discard, c, int64(len("PUT 100\n"))+100)
		io.WriteString(c, PatternSum(1, 99)+" 99\n")
	})
	if _, err := Put(c, 1, 100); err == nil {
		t.Fatal("Put accepted a mismatched digest")
	}
}

func TestParseRequestRejectsBadHeaders(t *testing.T) {
	for _, l := range []string{"", "PUT", "PUT -1", "PUT 2000000000", "GET 5", "GET 5 x", "DEL 5", "PUT 5 6"} {
		if _, err := ParseRequest(l); !errors.Is(err, ErrBadRequest) {
			t.Errorf("ParseRequest(%q) = %v, want ErrBadRequest", l, err)
		}
	}
	r, err := ParseRequest("GET 16777216 42")
	if err != nil || r != (Request{Op: "GET", Size: 16777216, Seed: 42}) {
		t.Fatalf("ParseRequest GET = %+v, %v", r, err)
	}
	if !strings.HasPrefix(r.String(), "GET 16777216 42") {
		t.Fatalf("String = %q", r.String())
	}
}
