//go:build linux

package linuxpeer

import (
	"errors"
	"fmt"
	"net"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ErrNoBytesRetrans reports a kernel whose tcp_info stops before
// tcpi_bytes_retrans (added in Linux 4.19): its retransmitted bytes are not
// counted, and a figure of 0 would claim a clean connection.
var ErrNoBytesRetrans = errors.New("linuxpeer: the kernel's tcp_info has no tcpi_bytes_retrans (Linux 4.19 or later counts it)")

// bytesRetransEnd is the byte just past tcpi_bytes_retrans in the uapi
// struct tcp_info (include/uapi/linux/tcp.h): eight u8 fields (the last two
// bit-fields), 24 u32 from tcpi_rto to tcpi_total_retrans (ending at 104),
// four u64 pacing and byte counts (to 136), six u32 segment counts (to 160),
// four u64 delivery and limit times (to 192), two u32 delivered counts (to
// 200), then tcpi_bytes_sent and tcpi_bytes_retrans, u64 each: 208 to 216.
// control:linuxpeer-bytes-retrans-end
const bytesRetransEnd = 216

// TCPInfo returns the kernel's tcp_info for a connection made by Listen or
// Dial: cwnd, ssthresh, RTT, retransmits, delivery rate.
func TCPInfo(c net.Conn) (*unix.TCPInfo, error) {
	info, _, err := tcpInfo(c)
	return info, err
}

// RetransmittedBytes returns the bytes a kernel socket has retransmitted so
// far (tcpi_bytes_retrans): read on a connection's sending socket before it
// closes, the connection's retransmitted payload. It returns an error
// wrapping ErrNoBytesRetrans on a kernel that does not count them.
func RetransmittedBytes(c net.Conn) (uint64, error) {
	info, n, err := tcpInfo(c)
	if err != nil {
		return 0, err
	}
	return bytesRetrans(info, n)
}

// bytesRetrans is tcpi_bytes_retrans of a tcp_info of which the kernel
// filled n bytes.
func bytesRetrans(info *unix.TCPInfo, n uint32) (uint64, error) {
	// control:linuxpeer-bytes-retrans-length-unchecked
	if n < bytesRetransEnd {
		return 0, fmt.Errorf("%w: it filled %d bytes, tcpi_bytes_retrans ends at %d", ErrNoBytesRetrans, n, bytesRetransEnd)
	}
	return info.Bytes_retrans, nil
}

// tcpInfo reads TCP_INFO and how many bytes of it the kernel filled: an
// older kernel fills a prefix and leaves the rest zero, which unix's
// GetsockoptTCPInfo cannot tell from a zero count.
func tcpInfo(c net.Conn) (*unix.TCPInfo, uint32, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil, 0, fmt.Errorf("%w: %T is not a kernel socket", ErrBadConfig, c)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil, 0, err
	}
	var info unix.TCPInfo
	n := uint32(unix.SizeofTCPInfo)
	var errno syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		_, _, errno = unix.Syscall6(unix.SYS_GETSOCKOPT, fd, unix.IPPROTO_TCP, unix.TCP_INFO,
			uintptr(unsafe.Pointer(&info)), uintptr(unsafe.Pointer(&n)), 0)
	}); err != nil {
		return nil, 0, err
	}
	if errno != 0 {
		return nil, 0, fmt.Errorf("linuxpeer: getsockopt TCP_INFO: %w", errno)
	}
	return &info, n, nil
}
