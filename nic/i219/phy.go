package i219

import (
	"errors"
	"fmt"
	"time"
)

// ErrSemaphore reports that the firmware (the ME) kept the software/firmware
// semaphore past its timeout.
var ErrSemaphore = errors.New("i219: the ME holds the EXTCNF_CTRL.SWFLAG semaphore")

// ErrPHY reports a PHY that does not answer on MDIO.
var ErrPHY = errors.New("i219: PHY does not answer")

// acquireSWFlag takes EXTCNF_CTRL.SWFLAG, the semaphore the PCH shares with
// the ME around PHY and NVM access: first wait for the current owner to let
// go, then set the bit and read it back; a set bit that does not stick
// means the firmware took it in between (Intel's ich8lan acquire order).
// The 82574L has no ME semaphore of this kind.
func (d *dev) acquireSWFlag() error {
	if !d.variant.IsPCH() {
		return nil
	}
	for i := 0; ; i++ {
		if d.rd(regEXTCNF)&extcnfSWFlag == 0 {
			break
		}
		if i >= 50 {
			return fmt.Errorf("%w: still held after 50 ms", ErrSemaphore)
		}
		d.clk.Sleep(time.Millisecond)
	}
	d.wr(regEXTCNF, d.rd(regEXTCNF)|extcnfSWFlag)
	for i := 0; ; i++ {
		if d.rd(regEXTCNF)&extcnfSWFlag != 0 {
			return nil
		}
		if i >= 1000 {
			d.wr(regEXTCNF, d.rd(regEXTCNF)&^extcnfSWFlag)
			return fmt.Errorf("%w: the flag did not stick for 1 s", ErrSemaphore)
		}
		d.clk.Sleep(time.Millisecond)
	}
}

func (d *dev) releaseSWFlag() {
	if !d.variant.IsPCH() {
		return
	}
	if v := d.rd(regEXTCNF); v&extcnfSWFlag != 0 {
		d.wr(regEXTCNF, v&^extcnfSWFlag)
	}
}

// mdic runs one MDIO transaction through MDIC and waits for READY. The PCH
// needs 100 µs between transactions or the next read may return the
// previous value (Intel's ich8lan inserts the same delay on PCH2 and later).
func (d *dev) mdic(op, addr, reg uint32, data uint16) (uint16, error) {
	d.wr(regMDIC, uint32(data)|reg<<mdicRegShift|addr<<mdicPHYShift|op)
	var v uint32
	for i := 0; i < 640; i++ {
		d.clk.Sleep(50 * time.Microsecond)
		v = d.rd(regMDIC)
		if v&mdicReady != 0 {
			break
		}
	}
	if v&mdicReady == 0 {
		return 0, fmt.Errorf("%w: MDIC not ready (phy %d reg %d)", ErrPHY, addr, reg)
	}
	if v&mdicError != 0 {
		return 0, fmt.Errorf("%w: MDIC error (phy %d reg %d)", ErrPHY, addr, reg)
	}
	if d.variant.IsPCH() {
		d.clk.Sleep(100 * time.Microsecond)
	}
	return uint16(v), nil
}

// phyAddrFor returns the MDIO address of a PHY page: on the PCH the pages
// from 768 up (ULP, port control) answer at address 1, the rest at 2.
func (d *dev) phyAddrFor(page uint32) uint32 {
	if d.variant.IsPCH() && page >= pchHighPageStart {
		return pchPHYAddrHigh
	}
	return d.m.phyAddr
}

// readPHY reads a page-0 PHY register. The caller holds the semaphore.
func (d *dev) readPHY(reg uint32) (uint16, error) {
	return d.mdic(mdicOpRead, d.m.phyAddr, reg, 0)
}

func (d *dev) writePHY(reg uint32, v uint16) error {
	_, err := d.mdic(mdicOpWrite, d.m.phyAddr, reg, v)
	return err
}

// readPHYPage and writePHYPage select page (register 31, page << 5) and then
// access reg on it, as the PCH PHY's paged register space requires.
func (d *dev) readPHYPage(page, reg uint32) (uint16, error) {
	a := d.phyAddrFor(page)
	if _, err := d.mdic(mdicOpWrite, a, phyPageSelect, uint16(page<<5)); err != nil {
		return 0, err
	}
	return d.mdic(mdicOpRead, a, reg, 0)
}

func (d *dev) writePHYPage(page, reg uint32, v uint16) error {
	a := d.phyAddrFor(page)
	if _, err := d.mdic(mdicOpWrite, a, phyPageSelect, uint16(page<<5)); err != nil {
		return err
	}
	_, err := d.mdic(mdicOpWrite, a, reg, v)
	return err
}

// phyAccessible reports whether the PHY answers with a plausible ID; a PHY
// in ULP or on SMBus answers all ones or not at all.
func (d *dev) phyAccessible() bool {
	for i := 0; i < 2; i++ {
		id1, err1 := d.readPHY(phyID1)
		id2, err2 := d.readPHY(phyID2)
		if err1 == nil && err2 == nil && id1 != 0xFFFF && id1 != 0 && id2 != 0xFFFF {
			d.phyID = uint32(id1)<<16 | uint32(id2)
			return true
		}
	}
	return false
}
