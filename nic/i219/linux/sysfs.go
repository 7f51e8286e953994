//go:build linux

package i219linux

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Errors a caller can test with errors.Is; messages name the fix.
var (
	ErrBadAddress   = errors.New("i219linux: bad PCI address (want DDDD:BB:DD.F)")
	ErrDriverBound  = errors.New("i219linux: a kernel driver holds the device")
	ErrLockdown     = errors.New("i219linux: kernel lockdown forbids mapping PCI BARs")
	ErrIOMMU        = errors.New("i219linux: an IOMMU translates DMA for this device")
	ErrNoDriver     = errors.New("i219linux: kernel driver not available")
	ErrDMA          = errors.New("i219linux: DMA memory")
	ErrNotPermitted = errors.New("i219linux: not permitted (run as root)")
)

var bdfRE = regexp.MustCompile(`^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)

// SysfsRoot is where sysfs is mounted; tests may point it elsewhere.
var SysfsRoot = "/sys"

func devDir(bdf string) string { return filepath.Join(SysfsRoot, "bus/pci/devices", bdf) }

func checkBDF(bdf string) error {
	if !bdfRE.MatchString(bdf) {
		return fmt.Errorf("%w: %q", ErrBadAddress, bdf)
	}
	if _, err := os.Stat(devDir(bdf)); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrBadAddress, bdf, err)
	}
	return nil
}

// BoundDriver returns the name of the kernel driver bound to bdf, or "".
func BoundDriver(bdf string) (string, error) {
	if err := checkBDF(bdf); err != nil {
		return "", err
	}
	l, err := os.Readlink(filepath.Join(devDir(bdf), "driver"))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return filepath.Base(l), nil
}

// Unbind detaches bdf from its kernel driver, if any, and clears
// driver_override so no driver claims it again on its own.
func Unbind(bdf string) error {
	drv, err := BoundDriver(bdf)
	if err != nil {
		return err
	}
	if err := writeSysfs(filepath.Join(devDir(bdf), "driver_override"), "\n"); err != nil {
		return err
	}
	if drv == "" {
		return nil
	}
	return writeSysfs(filepath.Join(devDir(bdf), "driver", "unbind"), bdf)
}

// Bind attaches bdf to driver (for example "uio_pci_generic" or "vfio-pci")
// through driver_override and drivers_probe, unbinding the current driver
// first. The module must be loaded (modprobe).
func Bind(bdf, driver string) error {
	if err := checkBDF(bdf); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(SysfsRoot, "bus/pci/drivers", driver)); err != nil {
		return fmt.Errorf("%w: %s is not loaded (modprobe %s)", ErrNoDriver, driver, driver)
	}
	cur, err := BoundDriver(bdf)
	if err != nil {
		return err
	}
	if cur == driver {
		return nil
	}
	if err := writeSysfs(filepath.Join(devDir(bdf), "driver_override"), driver); err != nil {
		return err
	}
	if cur != "" {
		if err := writeSysfs(filepath.Join(devDir(bdf), "driver", "unbind"), bdf); err != nil {
			return err
		}
	}
	if err := writeSysfs(filepath.Join(SysfsRoot, "bus/pci/drivers_probe"), bdf); err != nil {
		return err
	}
	for i := 0; i < 100; i++ {
		if cur, _ = BoundDriver(bdf); cur == driver {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("i219linux: %s did not bind to %s (now %q)", bdf, driver, cur)
}

func writeSysfs(path, s string) error {
	err := os.WriteFile(path, []byte(s), 0)
	if errors.Is(err, os.ErrPermission) {
		return fmt.Errorf("%w: writing %s", ErrNotPermitted, path)
	}
	if err != nil {
		return fmt.Errorf("i219linux: writing %q to %s: %w", strings.TrimSpace(s), path, err)
	}
	return nil
}

// refuseKernelDriver fails when a driver other than one of allowed holds
// the device: two drivers programming one card corrupt each other's rings.
func refuseKernelDriver(bdf string, allowed ...string) error {
	drv, err := BoundDriver(bdf)
	if err != nil {
		return err
	}
	if drv == "" {
		return nil
	}
	for _, a := range allowed {
		if drv == a {
			return nil
		}
	}
	return fmt.Errorf("%w: %s is bound to %s; run i219linux.Unbind(%q) or echo %s > /sys/bus/pci/devices/%s/driver/unbind",
		ErrDriverBound, bdf, drv, bdf, bdf, bdf)
}

// refuseLockdown fails when kernel lockdown (integrity or confidentiality)
// is on: it forbids mmap of resource0, and the error would otherwise be a
// bare EPERM.
func refuseLockdown() error {
	b, err := os.ReadFile(filepath.Join(SysfsRoot, "kernel/security/lockdown"))
	if err != nil {
		return nil // no lockdown LSM
	}
	s := string(b)
	if strings.Contains(s, "[integrity]") || strings.Contains(s, "[confidentiality]") {
		return fmt.Errorf("%w (%s); boot with lockdown=none (and Secure Boot off) or use VFIO", ErrLockdown, strings.TrimSpace(s))
	}
	return nil
}

// refuseIOMMU fails when an IOMMU translates this device's DMA: physical
// addresses from pagemap are then not bus addresses, and the card's DMA
// would fault. Passthrough (iommu=pt, group type "identity") is fine.
func refuseIOMMU(bdf string) error {
	g, err := os.Readlink(filepath.Join(devDir(bdf), "iommu_group"))
	if err != nil {
		return nil // no IOMMU group: no translation
	}
	t, err := os.ReadFile(filepath.Join(SysfsRoot, "kernel/iommu_groups", filepath.Base(g), "type"))
	if err == nil && strings.TrimSpace(string(t)) == "identity" {
		return nil
	}
	return fmt.Errorf("%w (group %s, type %q); boot with iommu=pt or use OpenVFIO", ErrIOMMU, filepath.Base(g), strings.TrimSpace(string(t)))
}

// sysfsConfig is PCI config space through sysfs "config" (pread/pwrite).
type sysfsConfig struct{ f *os.File }

func (c sysfsConfig) ReadConfig16(off uint32) (uint16, error) {
	var b [2]byte
	if _, err := c.f.ReadAt(b[:], int64(off)); err != nil {
		return 0, err
	}
	return uint16(b[0]) | uint16(b[1])<<8, nil
}

func (c sysfsConfig) WriteConfig16(off uint32, v uint16) error {
	_, err := c.f.WriteAt([]byte{byte(v), byte(v >> 8)}, int64(off))
	return err
}

func (c sysfsConfig) ReadConfig32(off uint32) (uint32, error) {
	var b [4]byte
	if _, err := c.f.ReadAt(b[:], int64(off)); err != nil {
		return 0, err
	}
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24, nil
}

func (c sysfsConfig) WriteConfig32(off uint32, v uint32) error {
	_, err := c.f.WriteAt([]byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)}, int64(off))
	return err
}

// mapResource0 maps BAR0 through sysfs.
func mapResource0(bdf string) ([]byte, error) {
	f, err := os.OpenFile(filepath.Join(devDir(bdf), "resource0"), os.O_RDWR|os.O_SYNC, 0)
	if err != nil {
		if errors.Is(err, os.ErrPermission) {
			return nil, fmt.Errorf("%w: opening resource0 of %s", ErrNotPermitted, bdf)
		}
		return nil, fmt.Errorf("i219linux: resource0 of %s: %w", bdf, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if errors.Is(err, unix.EPERM) {
		if lerr := refuseLockdown(); lerr != nil {
			return nil, lerr
		}
		return nil, fmt.Errorf("%w: mmap of resource0 refused (EPERM); check lockdown and CAP_SYS_RAWIO", ErrNotPermitted)
	}
	if err != nil {
		return nil, fmt.Errorf("i219linux: mmap resource0 of %s: %w", bdf, err)
	}
	return mem, nil
}
