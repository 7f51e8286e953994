//go:build linux

package i219linux

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// fakeSysfs builds a sysfs tree with one PCI device and points SysfsRoot at
// it.
func fakeSysfs(t *testing.T, bdf string) string {
	t.Helper()
	root := t.TempDir()
	old := SysfsRoot
	SysfsRoot = root
	t.Cleanup(func() { SysfsRoot = old })
	dev := filepath.Join(root, "bus/pci/devices", bdf)
	if err := os.MkdirAll(dev, 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

func bindTo(t *testing.T, root, bdf, driver string) {
	t.Helper()
	d := filepath.Join(root, "bus/pci/drivers", driver)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(d, filepath.Join(root, "bus/pci/devices", bdf, "driver")); err != nil {
		t.Fatal(err)
	}
}

func TestRefusesDeviceHeldByKernelDriver(t *testing.T) {
	const bdf = "0000:00:03.0"
	root := fakeSysfs(t, bdf)
	bindTo(t, root, bdf, "e1000e")
	_, err := OpenSysfs(bdf)
	if !errors.Is(err, ErrDriverBound) {
		t.Fatalf("OpenSysfs = %v, want ErrDriverBound", err)
	}
	if !strings.Contains(err.Error(), "Unbind") {
		t.Fatalf("error does not name the fix: %v", err)
	}
}

func TestRefusesUnderLockdown(t *testing.T) {
	const bdf = "0000:00:03.0"
	root := fakeSysfs(t, bdf)
	sec := filepath.Join(root, "kernel/security")
	os.MkdirAll(sec, 0o755)
	os.WriteFile(filepath.Join(sec, "lockdown"), []byte("none [integrity] confidentiality\n"), 0o644)
	_, err := OpenSysfs(bdf)
	if !errors.Is(err, ErrLockdown) {
		t.Fatalf("OpenSysfs = %v, want ErrLockdown", err)
	}
}

func TestRefusesTranslatingIOMMUButAcceptsPassthrough(t *testing.T) {
	const bdf = "0000:00:03.0"
	root := fakeSysfs(t, bdf)
	grp := filepath.Join(root, "kernel/iommu_groups/5")
	os.MkdirAll(grp, 0o755)
	os.Symlink(grp, filepath.Join(root, "bus/pci/devices", bdf, "iommu_group"))
	os.WriteFile(filepath.Join(grp, "type"), []byte("DMA-FQ\n"), 0o644)
	if err := refuseIOMMU(bdf); !errors.Is(err, ErrIOMMU) || !strings.Contains(err.Error(), "iommu=pt") {
		t.Fatalf("refuseIOMMU = %v, want ErrIOMMU naming iommu=pt", err)
	}
	os.WriteFile(filepath.Join(grp, "type"), []byte("identity\n"), 0o644)
	if err := refuseIOMMU(bdf); err != nil {
		t.Fatalf("passthrough group refused: %v", err)
	}
}

func TestBadAddressRefused(t *testing.T) {
	fakeSysfs(t, "0000:00:03.0")
	for _, bdf := range []string{"00:03.0", "0000:00:04.0", "../../etc"} {
		if _, err := OpenSysfs(bdf); !errors.Is(err, ErrBadAddress) {
			t.Errorf("OpenSysfs(%q) = %v, want ErrBadAddress", bdf, err)
		}
	}
}

func TestBindNeedsLoadedModule(t *testing.T) {
	const bdf = "0000:00:03.0"
	fakeSysfs(t, bdf)
	if err := Bind(bdf, "uio_pci_generic"); !errors.Is(err, ErrNoDriver) || !strings.Contains(err.Error(), "modprobe") {
		t.Fatalf("Bind = %v, want ErrNoDriver naming modprobe", err)
	}
}

func TestMMIOReadsAndWrites(t *testing.T) {
	m := mmio{mem: make([]byte, 64)}
	m.Write32(8, 0xA5A50F0F)
	if got := m.Read32(8); got != 0xA5A50F0F {
		t.Fatalf("Read32 = %#x", got)
	}
	if m.mem[8] != 0x0F || m.mem[11] != 0xA5 {
		t.Fatal("not a little-endian 32-bit store")
	}
}

// TestRegisterWriteNeverReads inspects the compiled Write32: on amd64 an
// atomic store is an XCHG, which reads the register (and clears ICR or a
// statistics counter). The store must be a plain MOV.
func TestRegisterWriteNeverReads(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("instruction check written for amd64")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go toolchain to disassemble with")
	}
	lib := filepath.Join(t.TempDir(), "i219linux.a")
	if out, err := exec.Command(gobin, "build", "-o", lib, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(gobin, "tool", "objdump", "-s", `mmio\.Write32$`, lib).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool objdump: %v\n%s", err, out)
	}
	text := string(out)
	if !strings.Contains(text, "TEXT") {
		t.Fatalf("Write32 not found in the test binary:\n%s", text)
	}
	if strings.Contains(text, "XCHG") || strings.Contains(text, "LOCK") || strings.Contains(text, "CMPXCHG") {
		t.Fatalf("Write32 uses a read-modify-write instruction:\n%s", text)
	}
	var stored bool
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, "MOVL") && strings.Contains(l, ", 0(") || strings.Contains(l, "MOVL") && strings.Contains(l, ")(") {
			stored = true
		}
	}
	if !stored {
		t.Fatalf("no 32-bit MOV store found:\n%s", text)
	}
}
