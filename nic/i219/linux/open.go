//go:build linux

package i219linux

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/netramp/netramp/nic/i219"
	"golang.org/x/sys/unix"
)

// OpenSysfs returns a polling Platform for bdf (e.g. "0000:00:03.0"):
// BAR0 mapped through sysfs resource0, config space through sysfs config,
// DMA from hugepages or locked pages with pagemap addresses. The device must
// not be bound to a kernel driver (see Unbind).
func OpenSysfs(bdf string) (i219.Platform, error) {
	if err := checkBDF(bdf); err != nil {
		return i219.Platform{}, err
	}
	if err := refuseKernelDriver(bdf); err != nil {
		return i219.Platform{}, err
	}
	// With no driver bound nothing has enabled the device: have the kernel
	// put it in D0 with memory decoding on.
	en := filepath.Join(devDir(bdf), "enable")
	if b, err := os.ReadFile(en); err == nil && strings.TrimSpace(string(b)) == "0" {
		if err := writeSysfs(en, "1"); err != nil {
			return i219.Platform{}, err
		}
	}
	return openPagemap(bdf, nil)
}

// OpenUIO binds bdf to uio_pci_generic (modprobe it first) and returns a
// Platform with INTx interrupts from /dev/uioN; otherwise as OpenSysfs.
func OpenUIO(bdf string) (i219.Platform, error) {
	if err := checkBDF(bdf); err != nil {
		return i219.Platform{}, err
	}
	if err := refuseKernelDriver(bdf, "uio_pci_generic"); err != nil {
		return i219.Platform{}, err
	}
	if err := Bind(bdf, "uio_pci_generic"); err != nil {
		return i219.Platform{}, err
	}
	ents, err := os.ReadDir(filepath.Join(devDir(bdf), "uio"))
	if err != nil || len(ents) == 0 {
		return i219.Platform{}, fmt.Errorf("i219linux: no uio device under %s: %v", devDir(bdf), err)
	}
	var u *uioIRQ
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "uio") {
			f, err := os.OpenFile("/dev/"+e.Name(), os.O_RDWR, 0)
			if err != nil {
				return i219.Platform{}, fmt.Errorf("i219linux: %w", err)
			}
			u = &uioIRQ{f: f}
			break
		}
	}
	if u == nil {
		return i219.Platform{}, fmt.Errorf("i219linux: no uioN entry under %s", devDir(bdf))
	}
	p, err := openPagemap(bdf, u)
	if err != nil {
		u.f.Close()
	}
	return p, err
}

func openPagemap(bdf string, irq *uioIRQ) (i219.Platform, error) {
	if err := refuseLockdown(); err != nil {
		return i219.Platform{}, err
	}
	if err := refuseIOMMU(bdf); err != nil {
		return i219.Platform{}, err
	}
	cf, err := os.OpenFile(filepath.Join(devDir(bdf), "config"), os.O_RDWR, 0)
	if err != nil {
		if errors.Is(err, os.ErrPermission) {
			return i219.Platform{}, fmt.Errorf("%w: opening config of %s", ErrNotPermitted, bdf)
		}
		return i219.Platform{}, fmt.Errorf("i219linux: config of %s: %w", bdf, err)
	}
	bar, err := mapResource0(bdf)
	if err != nil {
		cf.Close()
		return i219.Platform{}, err
	}
	dma, err := newPagemapDMA()
	if err != nil {
		cf.Close()
		_ = unix.Munmap(bar)
		return i219.Platform{}, err
	}
	cfg := sysfsConfig{f: cf}
	p := i219.Platform{Regs: mmio{mem: bar}, Config: cfg, DMA: dma}
	if irq != nil {
		irq.cfg = cfg
		p.IRQ = irq
	}
	p.Close = func() error {
		dma.close()
		_ = unix.Munmap(bar)
		if irq != nil {
			irq.f.Close()
		}
		return cf.Close()
	}
	return p, nil
}

// uioIRQ waits on /dev/uioN. uio_pci_generic masks INTx (PCI command bit
// 10) in its handler and has no irqcontrol write, so Ack unmasks through
// config space.
type uioIRQ struct {
	f   *os.File
	cfg sysfsConfig
}

func (u *uioIRQ) Wait(timeout time.Duration) (bool, error) {
	ok, err := waitFD(int(u.f.Fd()), timeout)
	if !ok || err != nil {
		return false, err
	}
	var b [4]byte
	_, err = u.f.Read(b[:]) // the interrupt count; reading consumes the event
	return err == nil, err
}

func (u *uioIRQ) Ack() error {
	cmd, err := u.cfg.ReadConfig16(0x04)
	if err != nil {
		return err
	}
	return u.cfg.WriteConfig16(0x04, cmd&^(1<<10))
}

// waitFD waits until fd is readable or timeout passes.
func waitFD(fd int, timeout time.Duration) (bool, error) {
	ms := int(timeout / time.Millisecond)
	if ms < 1 {
		ms = 1
	}
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, ms)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return false, err
		}
		return n > 0, nil
	}
}
