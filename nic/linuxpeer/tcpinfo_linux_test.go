//go:build linux

package linuxpeer

import (
	"errors"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestBytesRetransLayoutMatchesUAPI pins tcpi_bytes_retrans where the
// kernel's uapi struct tcp_info puts it: bytes 208 to 216.
func TestBytesRetransLayoutMatchesUAPI(t *testing.T) {
	var info unix.TCPInfo
	if end := unsafe.Offsetof(info.Bytes_retrans) + unsafe.Sizeof(info.Bytes_retrans); end != bytesRetransEnd {
		t.Fatalf("unix.TCPInfo.Bytes_retrans ends at byte %d, the uapi layout at %d", end, bytesRetransEnd)
	}
}

// TestBytesRetransNeedsTheFieldFilled reads the count only from a tcp_info
// the kernel filled through tcpi_bytes_retrans; a shorter one (a kernel
// before 4.19) is ErrNoBytesRetrans, never 0.
func TestBytesRetransNeedsTheFieldFilled(t *testing.T) {
	info := &unix.TCPInfo{Bytes_retrans: 4344}
	for _, c := range []struct {
		filled uint32
		want   uint64
		err    error
	}{
		{unix.SizeofTCPInfo, 4344, nil},
		{bytesRetransEnd, 4344, nil},
		{bytesRetransEnd - 1, 0, ErrNoBytesRetrans},
		{104, 0, ErrNoBytesRetrans}, // tcp_info of Linux 3.x: through tcpi_total_retrans
		{0, 0, ErrNoBytesRetrans},
	} {
		got, err := bytesRetrans(info, c.filled)
		if got != c.want || !errors.Is(err, c.err) {
			t.Errorf("filled %d bytes: got %d, %v; want %d, %v", c.filled, got, err, c.want, c.err)
		}
	}
}
