//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/netramp/netramp/metal/cmd/internal/guestnet"
)

// Register offsets in BAR0 (82574L datasheet §10.2).
const (
	regCTRL   = 0x0000
	regSTATUS = 0x0008
)

// STATUS bits (82574L datasheet §10.2.2.2).
const (
	statusFD = 1 << 0 // full duplex
	statusLU = 1 << 1 // link up
)

// findCard returns the sysfs directory of the card -dev names, or of the
// first 82574L.
func findCard() (string, error) { return guestnet.FindCard(pciAddr) }

// bar0 maps the card's first memory BAR through sysfs resource0.
type bar0 struct{ mem []byte }

func mapBAR0(dev string) (*bar0, error) {
	f, err := os.OpenFile(filepath.Join(dev, "resource0"), os.O_RDWR|os.O_SYNC, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap resource0: %w", err)
	}
	return &bar0{mem: mem}, nil
}

func (b *bar0) read32(off uint32) uint32 {
	return *(*uint32)(unsafe.Pointer(&b.mem[off]))
}

func (b *bar0) close() { unix.Munmap(b.mem) }

// checkRegs reads CTRL and STATUS and requires a full-duplex link that is up,
// which is how QEMU presents the card after reset with its netdev connected.
func checkRegs(backend string) (string, error) {
	dev, err := findCard()
	if err != nil {
		return "", err
	}
	drv := "none"
	if l, err := os.Readlink(filepath.Join(dev, "driver")); err == nil {
		drv = filepath.Base(l)
	}
	b, err := mapBAR0(dev)
	if err != nil {
		return "", err
	}
	defer b.close()
	ctrl, status := b.read32(regCTRL), b.read32(regSTATUS)
	detail := fmt.Sprintf("dev=%s driver=%s CTRL=%#08x STATUS=%#08x", filepath.Base(dev), drv, ctrl, status)
	if ctrl == 0xffffffff || status == 0xffffffff {
		return "", fmt.Errorf("BAR0 reads all ones (%s)", detail)
	}
	if status&(statusLU|statusFD) != statusLU|statusFD {
		return "", fmt.Errorf("link not up at full duplex (%s)", detail)
	}
	return detail, nil
}

// checkLinkRegs asks the host to take the link down and up and watches
// STATUS.LU in BAR0 change: the harness's own proof that QEMU's set_link
// reaches the card model.
func checkLinkRegs(backend string) (string, error) {
	dev, err := findCard()
	if err != nil {
		return "", err
	}
	b, err := mapBAR0(dev)
	if err != nil {
		return "", err
	}
	defer b.close()
	fmt.Println("SYNC linkdown")
	start := time.Now()
	var downAt, upAt time.Duration
	for time.Since(start) < 20*time.Second {
		lu := b.read32(regSTATUS)&statusLU != 0
		switch {
		case !lu && downAt == 0:
			downAt = time.Since(start)
		case lu && downAt != 0:
			upAt = time.Since(start)
			return fmt.Sprintf("STATUS.LU fell at %.2fs and rose at %.2fs", downAt.Seconds(), upAt.Seconds()), nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return "", fmt.Errorf("STATUS.LU did not fall and rise within 20s (fell at %v)", downAt)
}
