package i219

import (
	"errors"
	"fmt"
	"time"
)

// ErrTimeout reports a register that did not reach the expected state.
var ErrTimeout = errors.New("i219: timed out waiting for the card")

// dev is the card below the link endpoint: register access, PHY, reset and
// initialisation. It knows nothing of gVisor.
type dev struct {
	regs     Registers
	cfg      PCIConfig
	clk      Clock
	variant  Variant
	deviceID uint16
	m        regMap
	phyID    uint32
	useIRQ   bool
	mac      [6]byte
}

func (d *dev) rd(off uint32) uint32    { return d.regs.Read32(off) }
func (d *dev) wr(off uint32, v uint32) { d.regs.Write32(off, v) }

// flush makes posted writes reach the card by reading STATUS, which has no
// read side effects.
func (d *dev) flush() { d.rd(regSTATUS) }

// waitReg polls off until (v & mask) == want, every step, for at most n
// steps.
func (d *dev) waitReg(off, mask, want uint32, step time.Duration, n int) error {
	for i := 0; i < n; i++ {
		if d.rd(off)&mask == want {
			return nil
		}
		d.clk.Sleep(step)
	}
	if d.rd(off)&mask == want {
		return nil
	}
	return fmt.Errorf("%w: register %#x mask %#x never became %#x", ErrTimeout, off, mask, want)
}

// setPCICommand sets bus mastering and memory decoding, and masks INTx when
// the driver polls (PCI Local Bus spec, command register bit 10).
func (d *dev) setPCICommand(master bool) error {
	cmd, err := d.cfg.ReadConfig16(pciCommand)
	if err != nil {
		return fmt.Errorf("i219: PCI command: %w", err)
	}
	cmd |= pciCmdMemory
	if master {
		cmd |= pciCmdMaster
	} else {
		cmd &^= pciCmdMaster
	}
	if d.useIRQ {
		cmd &^= pciCmdIntxDisable
	} else {
		cmd |= pciCmdIntxDisable
	}
	if err := d.cfg.WriteConfig16(pciCommand, cmd); err != nil {
		return fmt.Errorf("i219: PCI command: %w", err)
	}
	return nil
}

// disableMastering stops the card's DMA before reset: set
// CTRL.GIO_MASTER_DISABLE and wait for STATUS.GIO_MASTER_ENABLE to clear, so
// no descriptor or buffer write lands after the rings are reused.
func (d *dev) disableMastering() error {
	d.wr(regCTRL, d.rd(regCTRL)|ctrlGIOMasterDis)
	return d.waitReg(regSTATUS, statusGIOMasterEn, 0, 100*time.Microsecond, 800)
}

// readMAC reads the station address. The MAC loads RAL0/RAH0 from the NVM
// at reset; the I219 has no EERD, so this is its only source. The 82574L
// falls back to EERD words 0-2 if RAH0's address-valid bit is clear.
func (d *dev) readMAC() error {
	lo, hi := d.rd(regRAL0), d.rd(regRAH0)
	if hi&(1<<31) == 0 && d.m.eerd != 0 {
		var w [3]uint16
		for i := range w {
			d.wr(d.m.eerd, uint32(i)<<2|eerdStart)
			if err := d.waitReg(d.m.eerd, eerdDone, eerdDone, 5*time.Microsecond, 10000); err != nil {
				return fmt.Errorf("i219: EEPROM read: %w", err)
			}
			w[i] = uint16(d.rd(d.m.eerd) >> 16)
		}
		lo = uint32(w[0]) | uint32(w[1])<<16
		hi = uint32(w[2]) | 1<<31
	}
	m := [6]byte{byte(lo), byte(lo >> 8), byte(lo >> 16), byte(lo >> 24), byte(hi), byte(hi >> 8)}
	if m == ([6]byte{}) || m[0]&1 != 0 {
		return fmt.Errorf("i219: no valid MAC address in RAL0/RAH0 (%x)", m[:])
	}
	d.mac = m
	return nil
}

// setMAC writes the station address into receive-address entry 0 with the
// address-valid bit.
func (d *dev) setMAC() {
	m := d.mac
	d.wr(regRAL0, uint32(m[0])|uint32(m[1])<<8|uint32(m[2])<<16|uint32(m[3])<<24)
	d.wr(regRAH0, uint32(m[4])|uint32(m[5])<<8|1<<31)
}
