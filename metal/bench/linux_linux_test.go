package bench

import (
	"io"
	"net"
	"testing"
)

// TestRetransCountReadsEachSocketAsItCloses counts kernel sockets over
// loopback (no root needed): both ends of a clean connection add 0 and the
// count is recorded; a socket whose tcp_info cannot be read (closed under
// the wrapper) leaves the count out and says how many were unread, so the
// row's retrans is not measured rather than 0. A conn that is no kernel
// socket passes through unwatched.
func TestRetransCountReadsEachSocketAsItCloses(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var r retransCount
	cl := countingListener{ln, &r}
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := cl.Accept()
		if err != nil {
			accepted <- nil
			return
		}
		accepted <- c
	}()
	raw, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := r.watch(raw)
	s := <-accepted
	if s == nil {
		t.Fatal("accept failed")
	}
	if _, ok := s.(interface{ CloseWrite() error }); !ok {
		t.Fatal("a watched socket lost CloseWrite")
	}
	go func() { _, _ = c.Write(make([]byte, 1<<20)); c.Close() }()
	if n, _ := io.Copy(io.Discard, s); n != 1<<20 {
		t.Fatalf("received %d bytes", n)
	}
	s.Close()
	s.Close() // a second close adds nothing
	m := map[string]uint64{}
	r.into(m)
	if v, ok := m["tcp.retransmitted.bytes"]; !ok || v != 0 || m["linux.tcp.bytes-retrans.unread"] != 0 {
		t.Fatalf("after a clean loopback connection: %v, want tcp.retransmitted.bytes 0 alone", m)
	}

	raw2, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c2 := r.watch(raw2)
	raw2.Close() // its tcp_info can no longer be read
	c2.Close()
	m = map[string]uint64{}
	r.into(m)
	if _, ok := m["tcp.retransmitted.bytes"]; ok || m["linux.tcp.bytes-retrans.unread"] != 1 {
		t.Errorf("after an unreadable socket: %v, want no tcp.retransmitted.bytes and 1 unread", m)
	}

	p, q := net.Pipe()
	defer q.Close()
	if r.watch(p) != p {
		t.Error("a pipe was wrapped as a kernel socket")
	}
	p.Close()
}
