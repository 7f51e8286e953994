//go:build linux

package tap

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/netramp/netramp/nic/netns"
	"golang.org/x/sys/unix"
)

// TUNSETOFFLOAD flags (linux/if_tun.h): what the reader accepts from the
// kernel. x/sys/unix does not define them.
const (
	tunFCsum = 0x01
	tunFTSO4 = 0x02
	tunFTSO6 = 0x04
)

// ErrBadConfig reports a Config the device cannot be opened with.
var ErrBadConfig = errors.New("tap: bad config")

// Config says which device to open and how.
type Config struct {
	// Name is the interface name (at most 15 bytes); the device is created
	// if it does not exist.
	Name string
	// Netns is the namespace file (e.g. /run/netns/x) the device is created
	// in; "" means the caller's namespace. The device is opened on a locked
	// thread that has entered the namespace.
	Netns string
	// TUN opens a TUN device (IP packets) instead of a TAP (Ethernet frames).
	TUN bool
	// VnetHdr puts a virtio-net header before every frame (IFF_VNET_HDR).
	VnetHdr bool
	// Offload tells the kernel the reader accepts partial checksums and TCP
	// GSO frames (TUNSETOFFLOAD CSUM|TSO4|TSO6), so it stops segmenting and
	// checksumming in software for this device. Requires VnetHdr.
	Offload bool
}

// Device is an open TAP or TUN file. Reads and writes go through Go's
// poller, so Close unblocks a pending Read.
type Device struct {
	f      *os.File
	name   string
	cfg    Config
	closed atomic.Bool
}

// Open creates (or attaches to) the device that cfg names. The device goes
// away when the last file on it is closed.
func Open(cfg Config) (*Device, error) {
	if cfg.Name == "" || len(cfg.Name) >= unix.IFNAMSIZ {
		return nil, fmt.Errorf("%w: interface name %q must be 1..15 bytes", ErrBadConfig, cfg.Name)
	}
	if cfg.Offload && !cfg.VnetHdr {
		return nil, fmt.Errorf("%w: Offload needs VnetHdr", ErrBadConfig)
	}
	var fd int
	err := netns.DoPath(cfg.Netns, func() error {
		var err error
		fd, err = unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err != nil {
			return fmt.Errorf("tap: open /dev/net/tun: %w", err)
		}
		ifr, err := unix.NewIfreq(cfg.Name)
		if err != nil {
			unix.Close(fd)
			return fmt.Errorf("%w: %v", ErrBadConfig, err)
		}
		flags := uint16(unix.IFF_TAP | unix.IFF_NO_PI)
		if cfg.TUN {
			flags = unix.IFF_TUN | unix.IFF_NO_PI
		}
		if cfg.VnetHdr {
			flags |= unix.IFF_VNET_HDR
		}
		ifr.SetUint16(flags)
		if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
			unix.Close(fd)
			return fmt.Errorf("tap: TUNSETIFF %s: %w", cfg.Name, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if cfg.VnetHdr {
		if err := unix.IoctlSetPointerInt(fd, unix.TUNSETVNETHDRSZ, VnetHdrLen); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("tap: TUNSETVNETHDRSZ: %w", err)
		}
	}
	if cfg.Offload {
		if err := unix.IoctlSetInt(fd, unix.TUNSETOFFLOAD, tunFCsum|tunFTSO4|tunFTSO6); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("tap: TUNSETOFFLOAD: %w", err)
		}
	}
	return &Device{f: os.NewFile(uintptr(fd), "/dev/net/tun:"+cfg.Name), name: cfg.Name, cfg: cfg}, nil
}

// Name returns the interface name.
func (d *Device) Name() string { return d.name }

// Config returns the configuration the device was opened with.
func (d *Device) Config() Config { return d.cfg }

// HeaderLen is the number of bytes before the frame on each read and write:
// VnetHdrLen with a virtio-net header, else 0.
func (d *Device) HeaderLen() int {
	if d.cfg.VnetHdr {
		return VnetHdrLen
	}
	return 0
}

// Read reads one frame (with its virtio-net header, if any) into b.
func (d *Device) Read(b []byte) (int, error) { return d.f.Read(b) }

// Write writes one frame (with its virtio-net header, if any).
func (d *Device) Write(b []byte) (int, error) { return d.f.Write(b) }

// Writev writes one frame gathered from bufs, waiting in Go's poller while
// the device is full. Endpoint does not use it: its writes are bounded.
func (d *Device) Writev(bufs [][]byte) (int, error) {
	rc, err := d.f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var werr error
	err = rc.Write(func(fd uintptr) bool {
		n, werr = unix.Writev(int(fd), bufs)
		return werr != unix.EAGAIN
	})
	if err != nil {
		return n, err
	}
	return n, werr
}

// tryWritev makes one non-blocking write of a frame gathered from bufs; a
// full device returns unix.EAGAIN at once instead of parking the caller.
func (d *Device) tryWritev(bufs [][]byte) (int, error) {
	rc, err := d.f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var werr error
	err = rc.Write(func(fd uintptr) bool {
		n, werr = unix.Writev(int(fd), bufs)
		return true
	})
	if err != nil {
		return n, err
	}
	return n, werr
}

// waitWritable reports, within writableWait, whether the device has room
// for a write; it returns an error once the device is closed.
func (d *Device) waitWritable() (bool, error) {
	rc, err := d.f.SyscallConn()
	if err != nil {
		return false, err
	}
	ok := false
	err = rc.Control(func(fd uintptr) {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
		n, perr := unix.Poll(pfd, int(writableWait/time.Millisecond))
		ok = perr == nil && n == 1 && pfd[0].Revents&unix.POLLOUT != 0
	})
	return ok, err
}

// Close closes the file; a non-persistent device disappears with it.
func (d *Device) Close() error {
	d.closed.Store(true)
	return d.f.Close()
}

// reader reads frames one at a time as Read does, but tells the caller
// when none is ready, before it waits in Go's poller for the next: where a
// delivery burst ends (Endpoint.readLoop). Its function value is made once,
// so a read allocates nothing.
type reader struct {
	d    *Device
	rc   syscall.RawConn
	buf  []byte
	n    int
	err  error
	idle func()
	try  func(fd uintptr) bool
}

// newReader reads into buf, calling idle each time the device has nothing
// ready to read; idle runs with the device's read lock held, so it must
// not read the device itself.
func (d *Device) newReader(buf []byte, idle func()) (*reader, error) {
	rc, err := d.f.SyscallConn()
	if err != nil {
		return nil, err
	}
	r := &reader{d: d, rc: rc, buf: buf, idle: idle}
	r.try = r.attempt
	return r, nil
}

// attempt is one non-blocking read; false means wait for readability.
func (r *reader) attempt(fd uintptr) bool {
	r.n, r.err = unix.Read(int(fd), r.buf)
	if r.err == unix.EAGAIN {
		r.idle()
		return false
	}
	return true
}

// read returns the next frame's length in buf, waiting for one;
// os.ErrClosed once the device is closed.
func (r *reader) read() (int, error) {
	if err := r.rc.Read(r.try); err != nil {
		if r.d.closed.Load() {
			return 0, os.ErrClosed
		}
		return 0, err
	}
	if r.err != nil {
		return 0, r.err
	}
	return r.n, nil
}
