package i219_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/netramp/netramp/nic/i219"
	"github.com/netramp/netramp/nic/i219/fake"
)

// Register offsets the tests look for in the trace.
const (
	offFEXTNVM11 = 0x5BBC
	offFEXTNVM7  = 0x00E4
	offFEXTNVM9  = 0x5BB4
	offIOSFPC    = 0x0F28
	offTARC0     = 0x3840
	offH2ME      = 0x5B50
	offIMC       = 0x00D8
)

// index returns the position of the first access in tr after from that
// matches, or -1.
func index(tr []fake.Access, from int, match func(fake.Access) bool) int {
	for i := from; i < len(tr); i++ {
		if match(tr[i]) {
			return i
		}
	}
	return -1
}

func write(off uint32, mask, want uint32) func(fake.Access) bool {
	return func(a fake.Access) bool { return a.Write && a.Off == off && a.Val&mask == want }
}

// lanphypcToggled reports whether the trace drives LANPHYPC low under
// override and then releases the override.
func lanphypcToggled(tr []fake.Access) bool {
	const ovr, val = 1 << 16, 1 << 17
	lo := index(tr, 0, write(fake.CTRL, ovr|val, ovr))
	return lo >= 0 && index(tr, lo+1, write(fake.CTRL, ovr, 0)) > lo
}

func TestULPWithoutMEIsForcedOffByLANPHYPCToggle(t *testing.T) {
	dev, ep := open(t, fake.Options{PHYInULP: true}, i219.Config{})
	if dev.PHYInULP() {
		t.Fatal("PHY still in ULP after Open")
	}
	if !lanphypcToggled(dev.Trace()) {
		t.Fatal("no LANPHYPC toggle in the register trace")
	}
	if ep.PHYID()>>16 != 0x0154 {
		t.Fatalf("PHY ID %#x, want the I219's 0x0154xxxx", ep.PHYID())
	}
	// ULP triggers cleared and committed with START in page 779 reg 16.
	if v := dev.PHYReg(779, 16); v&1 == 0 || v&^1 != 0 {
		t.Fatalf("ULP_CONFIG1 = %#x, want only START", v)
	}
}

func TestULPWithMEIsLeftToTheME(t *testing.T) {
	dev, _ := open(t, fake.Options{ME: true, PHYInULP: true}, i219.Config{})
	if dev.PHYInULP() {
		t.Fatal("PHY still in ULP after Open")
	}
	tr := dev.Trace()
	if index(tr, 0, write(offH2ME, 1<<12|1<<11, 1<<12)) < 0 {
		t.Fatal("driver did not ask the ME (H2ME enforce, ULP off)")
	}
	if lanphypcToggled(tr) {
		t.Fatal("driver toggled LANPHYPC although the ME owns the PHY")
	}
	if dev.Peek(offH2ME)&(1<<12) != 0 {
		t.Fatal("H2ME enforce-settings left set")
	}
}

// TestMEThatNeverLeavesULPFallsBackToLANPHYPC: the ME does not answer the
// ULP exit request; the driver goes on to the recovery, whose LANPHYPC
// cycle wakes the PHY, and Open succeeds.
func TestMEThatNeverLeavesULPFallsBackToLANPHYPC(t *testing.T) {
	dev, _ := open(t, fake.Options{ME: true, PHYInULP: true, MEIgnoresULPExit: true}, i219.Config{})
	if dev.PHYInULP() {
		t.Fatal("PHY still in ULP")
	}
	if !lanphypcToggled(dev.Trace()) {
		t.Fatal("no LANPHYPC recovery after the ME failed to leave ULP")
	}
}

func TestPHYOnSMBusRecoveredByForcingSMBus(t *testing.T) {
	dev, _ := open(t, fake.Options{ME: true, PHYOnSMBus: true}, i219.Config{})
	const force = 1 << 11
	tr := dev.Trace()
	on := index(tr, 0, write(fake.CTRLEXT, force, force))
	if on < 0 || index(tr, on+1, write(fake.CTRLEXT, force, 0)) < 0 {
		t.Fatal("SMBus not forced and released around the PHY recovery")
	}
	if lanphypcToggled(tr) {
		t.Fatal("LANPHYPC toggled although forcing SMBus was enough")
	}
	if dev.Peek(fake.CTRLEXT)&force != 0 {
		t.Fatal("MAC left forcing SMBus")
	}
}

func TestSWFlagWaitsForTheME(t *testing.T) {
	dev, ep := open(t, fake.Options{MEHoldsSWFlag: 20}, i219.Config{})
	if !ep.LinkUp() {
		t.Fatal("no link")
	}
	_ = dev
}

func TestSWFlagHeldForeverFailsWithErrSemaphore(t *testing.T) {
	dev := fake.New(fake.Options{MEHoldsSWFlag: 1 << 30})
	_, err := i219.Open(dev.Platform(), i219.Config{ManualPoll: true})
	if !errors.Is(err, i219.ErrSemaphore) {
		t.Fatalf("Open = %v, want ErrSemaphore", err)
	}
	if dev.Clk.Slept > 2*time.Second {
		t.Fatalf("waited %v for the semaphore, want about 50 ms", dev.Clk.Slept)
	}
}

func TestFlushRequiredDrainsRingsBeforeReset(t *testing.T) {
	for _, rx := range []bool{false, true} {
		dev, _ := open(t, fake.Options{FlushRequired: true, FlushNeedsRX: rx, StaleRing: true}, i219.Config{})
		if dev.FlushPending() {
			t.Fatalf("rx=%v: flush still required after Open", rx)
		}
		tr := dev.Trace()
		mulr := index(tr, 0, write(offFEXTNVM11, 1<<13, 1<<13))
		base := index(tr, 0, func(a fake.Access) bool { return a.Write && a.Off == fake.TDBAL && a.Val != 0xDEAD0000 })
		tdt := index(tr, 0, write(fake.TDT, 0xFFFF, 1))
		rst := index(tr, 0, write(fake.CTRL, 1<<26, 1<<26))
		if mulr < 0 || base < 0 || tdt < 0 || rst < 0 || !(mulr < base && base < tdt && tdt < rst) {
			t.Fatalf("rx=%v: want MULR fix < ring base < dummy TDT < reset, got %d %d %d %d", rx, mulr, base, tdt, rst)
		}
		rxOn := index(tr, 0, write(fake.RCTL, 2, 2))
		if rx && (rxOn < 0 || rxOn > rst) {
			t.Fatalf("rx=%v: no RX flush before reset", rx)
		}
		if !rx && rxOn >= 0 && rxOn < rst {
			t.Fatalf("RX flushed although the TX flush cleared the flag")
		}
	}
}

func TestNoFlushOn82574(t *testing.T) {
	dev, _ := open(t, fake.Options{DeviceID: 0x10D3}, i219.Config{})
	for _, a := range dev.Trace() {
		if a.Write && (a.Off == offFEXTNVM11 || a.Off == offFEXTNVM7 || a.Off == offIOSFPC || a.Off == 0x5BB4) {
			t.Fatalf("82574L got a PCH-only register write: %v", a)
		}
	}
}

func TestPerVariantRegisterMap(t *testing.T) {
	// The I219 has FEXTNVM at 0x28 and FEXTNVM6/5 at 0x10/0x14: the
	// 82574L's FCAL and EEPROM registers must never be written there.
	dev, _ := open(t, fake.Options{}, i219.Config{})
	for _, a := range dev.Trace() {
		if a.Write && (a.Off == 0x0010 || a.Off == 0x0014 || a.Off == 0x0028 || a.Off == 0x002C || a.Off == 0x0030) {
			t.Fatalf("I219 got an 82574L-only register write: %v", a)
		}
	}
	dev, _ = open(t, fake.Options{DeviceID: 0x10D3}, i219.Config{})
	if dev.Peek(0x0030) != 0x8808 {
		t.Fatalf("82574L flow-control type = %#x, want 0x8808", dev.Peek(0x0030))
	}
}

func TestSPTTxErrataOnlyOnSunrisePoint(t *testing.T) {
	dev, _ := open(t, fake.Options{DeviceID: 0x15B8}, i219.Config{})
	if v := dev.Peek(offTARC0); v&(3<<28) != 2<<28 {
		t.Fatalf("SPT TARC0 = %#x, want two outstanding requests (bits 29:28 = 10)", v)
	}
	if dev.Peek(offIOSFPC)&(1<<16) == 0 {
		t.Fatal("SPT IOSFPC.RDMTS_HEX not set")
	}
	dev, _ = open(t, fake.Options{DeviceID: 0x550B}, i219.Config{})
	if index(dev.Trace(), 0, func(a fake.Access) bool { return a.Write && a.Off == offIOSFPC }) >= 0 {
		t.Fatal("IOSFPC written on a Meteor Lake I219")
	}
}

func TestLegacyINTxKeepsClocksUngated(t *testing.T) {
	dev := fake.New(fake.Options{})
	p := dev.Platform()
	p.IRQ = fake.Interrupt{D: dev}
	ep, err := i219.Open(p, i219.Config{ManualPoll: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	if dev.Peek(offFEXTNVM7)&(1<<2) == 0 || dev.Peek(offFEXTNVM9)&(3<<12) != 3<<12 {
		t.Fatalf("FEXTNVM7 %#x FEXTNVM9 %#x: side and IOSF clocks still gated", dev.Peek(offFEXTNVM7), dev.Peek(offFEXTNVM9))
	}
	if dev.Config16(fake.CfgCommand)&(1<<10) != 0 {
		t.Fatal("INTx left masked although the platform has an interrupt source")
	}
	poll, _ := open(t, fake.Options{}, i219.Config{})
	if poll.Config16(fake.CfgCommand)&(1<<10) == 0 {
		t.Fatal("INTx not masked for a polling driver")
	}
}

func TestEEEOffAndAutonegotiationStarted(t *testing.T) {
	dev, _ := open(t, fake.Options{}, i219.Config{})
	if dev.EMI(0x8001) != 0 {
		t.Fatalf("EEE advertisement %#x, want 0", dev.EMI(0x8001))
	}
	if dev.PHYReg(0, 4)&0x01E0 != 0x01E0 || dev.PHYReg(0, 9)&(1<<9) == 0 {
		t.Fatalf("advertisement ANAR %#x GBCR %#x", dev.PHYReg(0, 4), dev.PHYReg(0, 9))
	}
}

// TestInitOrderFollowsIntel checks the write trace against the shared-code
// order: PHY workarounds (ULP off) before anything else, then the ring
// flush, mask interrupts, stop RX/TX, mastering disable, reset under the
// semaphore, link setup (autonegotiation), TX ring, TX enable, RX ring, RX
// enable, RX tail.
func TestInitOrderFollowsIntel(t *testing.T) {
	dev, _ := open(t, fake.Options{FlushRequired: true, StaleRing: true, PHYInULP: true}, i219.Config{})
	tr := dev.Trace()
	steps := []struct {
		name  string
		match func(fake.Access) bool
	}{
		{"semaphore for the PHY", write(fake.EXTCNF, 1<<5, 1<<5)},
		{"ULP toggle", write(fake.CTRL, 1<<16|1<<17, 1<<16)},
		{"ULP commit", write(fake.MDIC, 0x0C1F0000|1, 0x04100000|1)},
		{"MULR fix", write(offFEXTNVM11, 1<<13, 1<<13)},
		{"flush: TX enabled", write(fake.TCTL, 2, 2)},
		{"mask interrupts", write(offIMC, 0xFFFFFFFF, 0xFFFFFFFF)},
		{"RX off", write(fake.RCTL, 0xFFFFFFFF, 0)},
		{"mastering disable", write(fake.CTRL, 1<<2, 1<<2)},
		{"semaphore for the reset", write(fake.EXTCNF, 1<<5, 1<<5)},
		{"reset", write(fake.CTRL, 1<<26, 1<<26)},
		{"driver loaded", write(fake.CTRLEXT, 1<<28, 1<<28)},
		{"autoneg restart", write(fake.MDIC, 0x0C1FFFFF, 0x04000000|0x1200)},
		{"set link up", write(fake.CTRL, 1<<6, 1<<6)},
		{"TX base", write(fake.TDBAL, 0, 0)},
		{"TX enable", write(fake.TCTL, 2, 2)},
		{"RX base", write(fake.RDBAL, 0, 0)},
		{"RX enable", write(fake.RCTL, 2, 2)},
		{"RX tail", write(fake.RDT, 0, 0)},
	}
	at := 0
	for _, s := range steps {
		i := index(tr, at, s.match)
		if i < 0 {
			t.Fatalf("step %q missing after trace position %d", s.name, at)
		}
		at = i + 1
	}
}

// TestBadConfigNamesTheField: every out-of-range Config field is an
// ErrConfig naming it, not a silent default.
func TestBadConfigNamesTheField(t *testing.T) {
	for _, tc := range []struct {
		field string
		c     i219.Config
	}{
		{"RXDescriptors", i219.Config{RXDescriptors: -8}},
		{"RXDescriptors", i219.Config{RXDescriptors: 12}},
		{"TXDescriptors", i219.Config{TXDescriptors: 4104}},
		{"PollInterval", i219.Config{PollInterval: -time.Millisecond}},
		{"PollBatch", i219.Config{PollBatch: -1}},
	} {
		tc.c.ManualPoll = true
		dev := fake.New(fake.Options{})
		_, err := i219.Open(dev.Platform(), tc.c)
		if !errors.Is(err, i219.ErrConfig) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%+v: %v, want ErrConfig naming %s", tc.c, err, tc.field)
		}
	}
}

func TestBadRingSizeRefused(t *testing.T) {
	for _, n := range []int{4, 100, 8192} {
		dev := fake.New(fake.Options{})
		_, err := i219.Open(dev.Platform(), i219.Config{ManualPoll: true, TXDescriptors: n})
		if !errors.Is(err, i219.ErrConfig) {
			t.Errorf("TXDescriptors=%d: %v, want ErrConfig", n, err)
		}
	}
}
