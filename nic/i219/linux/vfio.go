//go:build linux

package i219linux

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
	"unsafe"

	"github.com/netramp/netramp/nic/i219"
	"golang.org/x/sys/unix"
)

// VFIO ioctls: _IO(';', 100 + n) from linux/vfio.h.
const (
	vfioGetAPIVersion     = 0x3B64
	vfioCheckExtension    = 0x3B65
	vfioSetIOMMU          = 0x3B66
	vfioGroupGetStatus    = 0x3B67
	vfioGroupSetContainer = 0x3B68
	vfioGroupGetDeviceFD  = 0x3B6A
	vfioDeviceGetRegion   = 0x3B6C
	vfioDeviceSetIRQs     = 0x3B6E
	vfioDeviceReset       = 0x3B6F
	vfioIOMMUMapDMA       = 0x3B71

	vfioType1IOMMU   = 1
	vfioType1v2IOMMU = 3
	vfioGroupViable  = 1
	vfioRegionMmap   = 1 << 2
	vfioBAR0Index    = 0
	vfioConfigIndex  = 7
	vfioINTxIndex    = 0

	vfioIRQDataNone     = 1 << 0
	vfioIRQDataEventfd  = 1 << 2
	vfioIRQActionUnmask = 1 << 4
	vfioIRQActionTrig   = 1 << 5

	vfioDMARead  = 1 << 0
	vfioDMAWrite = 1 << 1

	// vfioIOVABase is where the driver's DMA memory starts in the device's
	// address space; any range the IOMMU accepts would do.
	vfioIOVABase = 1 << 32
)

type vfioRegionInfo struct {
	Argsz, Flags, Index, CapOffset uint32
	Size, Offset                   uint64
}

type vfioDMAMap struct {
	Argsz, Flags      uint32
	Vaddr, IOVA, Size uint64
}

func ioctl(fd int, req uintptr, arg unsafe.Pointer) (int, error) {
	r, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(arg))
	if e != 0 {
		return int(r), e
	}
	return int(r), nil
}

// ioctlInt is ioctl with an integer argument.
func ioctlInt(fd int, req, arg uintptr) (int, error) {
	r, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, arg)
	if e != 0 {
		return int(r), e
	}
	return int(r), nil
}

// OpenVFIO binds bdf to vfio-pci (modprobe vfio-pci first; the kernel needs
// an active IOMMU, e.g. intel_iommu=on) and returns a Platform with BAR0,
// config space, IOMMU-mapped DMA and INTx through an eventfd.
func OpenVFIO(bdf string) (i219.Platform, error) {
	if err := checkBDF(bdf); err != nil {
		return i219.Platform{}, err
	}
	if err := refuseKernelDriver(bdf, "vfio-pci"); err != nil {
		return i219.Platform{}, err
	}
	if err := Bind(bdf, "vfio-pci"); err != nil {
		return i219.Platform{}, err
	}
	g, err := os.Readlink(filepath.Join(devDir(bdf), "iommu_group"))
	if err != nil {
		return i219.Platform{}, fmt.Errorf("%w: %s has no IOMMU group; VFIO needs an IOMMU (boot with intel_iommu=on)", ErrNoDriver, bdf)
	}
	v := &vfio{}
	ok := false
	defer func() {
		if !ok {
			v.close()
		}
	}()
	if v.container, err = unix.Open("/dev/vfio/vfio", unix.O_RDWR|unix.O_CLOEXEC, 0); err != nil {
		return i219.Platform{}, fmt.Errorf("i219linux: /dev/vfio/vfio: %w", err)
	}
	if r, err := ioctlInt(v.container, vfioGetAPIVersion, 0); err != nil || r != 0 {
		return i219.Platform{}, fmt.Errorf("i219linux: VFIO API version %d: %v", r, err)
	}
	iommuType := uintptr(vfioType1v2IOMMU)
	if r, _ := ioctlInt(v.container, vfioCheckExtension, iommuType); r != 1 {
		iommuType = vfioType1IOMMU
		if r, _ := ioctlInt(v.container, vfioCheckExtension, iommuType); r != 1 {
			return i219.Platform{}, fmt.Errorf("i219linux: VFIO type1 IOMMU not supported")
		}
	}
	grp := "/dev/vfio/" + filepath.Base(g)
	if v.group, err = unix.Open(grp, unix.O_RDWR|unix.O_CLOEXEC, 0); err != nil {
		return i219.Platform{}, fmt.Errorf("i219linux: %s: %w", grp, err)
	}
	status := [2]uint32{8, 0}
	if _, err := ioctl(v.group, vfioGroupGetStatus, unsafe.Pointer(&status)); err != nil {
		return i219.Platform{}, fmt.Errorf("i219linux: VFIO group status: %w", err)
	}
	if status[1]&vfioGroupViable == 0 {
		return i219.Platform{}, fmt.Errorf("i219linux: VFIO group %s not viable: bind every device in it to vfio-pci", filepath.Base(g))
	}
	cfd := int32(v.container)
	if _, err := ioctl(v.group, vfioGroupSetContainer, unsafe.Pointer(&cfd)); err != nil {
		return i219.Platform{}, fmt.Errorf("i219linux: VFIO set container: %w", err)
	}
	if _, err := ioctlInt(v.container, vfioSetIOMMU, iommuType); err != nil {
		return i219.Platform{}, fmt.Errorf("i219linux: VFIO set IOMMU: %w", err)
	}
	name, _ := unix.BytePtrFromString(bdf)
	if v.device, err = ioctl(v.group, vfioGroupGetDeviceFD, unsafe.Pointer(name)); err != nil {
		return i219.Platform{}, fmt.Errorf("i219linux: VFIO device fd: %w", err)
	}
	bar, err := v.region(vfioBAR0Index)
	if err != nil {
		return i219.Platform{}, err
	}
	if v.cfg, err = v.region(vfioConfigIndex); err != nil {
		return i219.Platform{}, err
	}
	var regs i219.Registers
	if bar.Flags&vfioRegionMmap != 0 {
		mem, err := unix.Mmap(v.device, int64(bar.Offset), int(bar.Size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			return i219.Platform{}, fmt.Errorf("i219linux: mmap BAR0 through VFIO: %w", err)
		}
		v.bar = mem
		regs = mmio{mem: mem}
	} else {
		regs = vfioRegs{fd: v.device, off: int64(bar.Offset)}
	}
	// INTx through an eventfd.
	if v.event, err = unix.Eventfd(0, unix.EFD_CLOEXEC); err != nil {
		return i219.Platform{}, fmt.Errorf("i219linux: eventfd: %w", err)
	}
	if err := v.setIRQ(vfioIRQDataEventfd|vfioIRQActionTrig, int32(v.event)); err != nil {
		return i219.Platform{}, fmt.Errorf("i219linux: VFIO INTx eventfd: %w", err)
	}
	v.iova = vfioIOVABase
	ok = true
	return i219.Platform{
		Regs:   regs,
		Config: vfioConfig{fd: v.device, off: int64(v.cfg.Offset)},
		DMA:    v,
		IRQ:    vfioIRQ{v},
		Close:  func() error { v.close(); return nil },
	}, nil
}

type vfio struct {
	container, group, device, event int
	cfg                             vfioRegionInfo
	bar                             []byte

	mu   sync.Mutex
	iova uint64
	maps [][]byte
}

func (v *vfio) region(index uint32) (vfioRegionInfo, error) {
	ri := vfioRegionInfo{Argsz: uint32(unsafe.Sizeof(vfioRegionInfo{})), Index: index}
	if _, err := ioctl(v.device, vfioDeviceGetRegion, unsafe.Pointer(&ri)); err != nil {
		return ri, fmt.Errorf("i219linux: VFIO region %d: %w", index, err)
	}
	return ri, nil
}

func (v *vfio) setIRQ(flags uint32, fd int32) error {
	var b [24]byte
	n := 20
	binary.NativeEndian.PutUint32(b[4:], flags)
	binary.NativeEndian.PutUint32(b[8:], vfioINTxIndex)
	binary.NativeEndian.PutUint32(b[12:], 0) // start
	binary.NativeEndian.PutUint32(b[16:], 1) // count
	if flags&vfioIRQDataEventfd != 0 {
		binary.NativeEndian.PutUint32(b[20:], uint32(fd))
		n = 24
	}
	binary.NativeEndian.PutUint32(b[0:], uint32(n))
	_, err := ioctl(v.device, vfioDeviceSetIRQs, unsafe.Pointer(&b[0]))
	return err
}

// AllocDMA implements i219.DMAAllocator: anonymous memory, locked and
// mapped into the IOMMU at the next free IOVA. The IOMMU makes it
// contiguous for the card whatever the physical pages are.
func (v *vfio) AllocDMA(size, align int) (i219.DMAMemory, error) {
	if size <= 0 || align <= 0 || align&(align-1) != 0 || align > pageSize {
		return i219.DMAMemory{}, fmt.Errorf("%w: size %d align %d", i219.ErrConfig, size, align)
	}
	n := (size + pageSize - 1) &^ (pageSize - 1)
	mem, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return i219.DMAMemory{}, fmt.Errorf("%w: mmap: %v", ErrDMA, err)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	m := vfioDMAMap{
		Argsz: uint32(unsafe.Sizeof(vfioDMAMap{})),
		Flags: vfioDMARead | vfioDMAWrite,
		Vaddr: uint64(uintptr(unsafe.Pointer(&mem[0]))),
		IOVA:  v.iova,
		Size:  uint64(n),
	}
	if _, err := ioctl(v.container, vfioIOMMUMapDMA, unsafe.Pointer(&m)); err != nil {
		_ = unix.Munmap(mem)
		return i219.DMAMemory{}, fmt.Errorf("%w: VFIO_IOMMU_MAP_DMA: %v (raise RLIMIT_MEMLOCK)", ErrDMA, err)
	}
	v.iova += uint64(n)
	v.maps = append(v.maps, mem)
	return i219.DMAMemory{Mem: mem[:size:size], Bus: m.IOVA}, nil
}

func (v *vfio) close() {
	if v.bar != nil {
		_ = unix.Munmap(v.bar)
		v.bar = nil
	}
	for _, fd := range []*int{&v.event, &v.device, &v.group, &v.container} {
		if *fd > 0 {
			unix.Close(*fd)
			*fd = 0
		}
	}
	v.mu.Lock()
	for _, m := range v.maps {
		_ = unix.Munmap(m)
	}
	v.maps = nil
	v.mu.Unlock()
}

// vfioIRQ waits on the INTx eventfd. VFIO masks INTx when it fires (its
// handler cannot know when the device deasserts the line), so Ack unmasks
// it with VFIO_DEVICE_SET_IRQS.
type vfioIRQ struct{ v *vfio }

func (q vfioIRQ) Wait(timeout time.Duration) (bool, error) {
	ok, err := waitFD(q.v.event, timeout)
	if !ok || err != nil {
		return false, err
	}
	var b [8]byte
	if _, err := unix.Read(q.v.event, b[:]); err != nil && !errors.Is(err, unix.EAGAIN) {
		return false, err
	}
	return true, nil
}

func (q vfioIRQ) Ack() error { return q.v.setIRQ(vfioIRQDataNone|vfioIRQActionUnmask, 0) }

// vfioConfig is config space through the VFIO config region.
type vfioConfig struct {
	fd  int
	off int64
}

func (c vfioConfig) ReadConfig16(off uint32) (uint16, error) {
	var b [2]byte
	_, err := unix.Pread(c.fd, b[:], c.off+int64(off))
	return binary.LittleEndian.Uint16(b[:]), err
}

func (c vfioConfig) WriteConfig16(off uint32, v uint16) error {
	var b [2]byte
	binary.LittleEndian.PutUint16(b[:], v)
	_, err := unix.Pwrite(c.fd, b[:], c.off+int64(off))
	return err
}

func (c vfioConfig) ReadConfig32(off uint32) (uint32, error) {
	var b [4]byte
	_, err := unix.Pread(c.fd, b[:], c.off+int64(off))
	return binary.LittleEndian.Uint32(b[:]), err
}

func (c vfioConfig) WriteConfig32(off uint32, v uint32) error {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], v)
	_, err := unix.Pwrite(c.fd, b[:], c.off+int64(off))
	return err
}

// vfioRegs reaches BAR0 with pread/pwrite when VFIO offers no mmap. Each
// access is one 4-byte pread or pwrite, which VFIO turns into one 32-bit
// MMIO access (a write is never a read-modify-write).
type vfioRegs struct {
	fd  int
	off int64
}

func (r vfioRegs) Read32(off uint32) uint32 {
	var b [4]byte
	if _, err := unix.Pread(r.fd, b[:], r.off+int64(off)); err != nil {
		return 0xFFFFFFFF
	}
	return binary.LittleEndian.Uint32(b[:])
}

func (r vfioRegs) Write32(off uint32, v uint32) {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], v)
	_, _ = unix.Pwrite(r.fd, b[:], r.off+int64(off))
}
