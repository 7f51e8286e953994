package i219

import (
	"fmt"
	"time"
)

// The I219 sits in the PCH next to the Management Engine. These are the
// steps its MAC needs that the 82574L does not; each names the reason.

// flushRequired reports whether the I219 asks for its descriptor rings to be
// flushed (PCI config 0xE4 bit 8). On SPT and later a reset while the ring
// is not flushed can hang the unit (Intel's ich8lan driver flushes in that
// case before every reset).
func (d *dev) flushRequired() bool {
	if !d.variant.IsPCH() {
		return false
	}
	v, err := d.cfg.ReadConfig16(pciDescRingStatus)
	return err == nil && v&pciFlushDescNeeded != 0
}

// flushRings drains the rings before a reset on SPT and later: first set
// FEXTNVM11.DISABLE_MULR_FIX (always), then, if config 0xE4 asks for a flush
// and a TX ring is programmed, push one dummy 512-byte descriptor through an
// enabled transmitter; if the flag is still up, enable the receiver briefly
// with thresholds that make it fetch and write back at once. Without this
// the unit can hang until a PCI reset.
func (d *dev) flushRings(tx *txRing) {
	d.wr(d.m.fextnv11, d.rd(d.m.fextnv11)|fext11NoMULRFix)
	if !d.flushRequired() || d.rd(regTDLEN) == 0 {
		return
	}
	// The card must fetch from memory this driver owns: point the TX ring
	// at ours if it points elsewhere (left over from firmware or another OS).
	if d.rd(regTDBAL) != uint32(tx.bus) || d.rd(regTDBAH) != uint32(tx.bus>>32) {
		d.wr(regTDBAL, uint32(tx.bus))
		d.wr(regTDBAH, uint32(tx.bus>>32))
		d.wr(regTDLEN, uint32(tx.n*descSize))
		d.wr(regTDH, 0)
		d.wr(regTDT, 0)
		tx.tail = 0
	}
	d.wr(regTCTL, d.rd(regTCTL)|tctlEN)
	i := tx.tail
	tx.desc(i).set(tx.bufs.bus[i], 512, txCmdIFCS)
	tx.tail = (i + 1) % tx.n
	d.wr(regTDT, uint32(tx.tail))
	d.flush()
	d.clk.Sleep(250 * time.Microsecond)

	if !d.flushRequired() {
		return
	}
	rctl := d.rd(regRCTL)
	d.wr(regRCTL, rctl&^rctlEN)
	d.flush()
	d.clk.Sleep(150 * time.Microsecond)
	rx := d.rd(regRXDCTL)
	rx = rx&0xFFFFC000 | 0x1F | 1<<8 | dctlGran // prefetch 31, host 1, in descriptors
	d.wr(regRXDCTL, rx)
	d.wr(regRCTL, rctl|rctlEN)
	d.flush()
	d.clk.Sleep(150 * time.Microsecond)
	d.wr(regRCTL, rctl&^rctlEN)
}

// meValid reports whether the ME firmware runs (FWSM.FW_VALID).
func (d *dev) meValid() bool { return d.rd(d.m.fwsm)&fwsmFWValid != 0 }

// disableULP takes the PHY out of Ultra Low Power. I218/I219 PHYs enter ULP
// on cable disconnect or Sx and then do not answer MDIO. With the ME
// running, only the ME may reconfigure the PHY: ask it through H2ME
// (ULP off, enforce settings) and wait up to 300 ms for it to clear
// FWSM.ULP_CFG_DONE. Without the ME the driver forces ULP off itself, in
// Intel's order: power-cycle the PHY with LANPHYPC, take PHY and MAC off
// SMBus, clear the ULP triggers in PHY page 779 and commit them with START,
// and let SMBus be released on PERST# again.
func (d *dev) disableULP() error {
	if d.meValid() {
		h := d.rd(d.m.h2me)
		d.wr(d.m.h2me, (h&^h2meULP)|h2meEnforce)
		if err := d.waitReg(d.m.fwsm, fwsmULPCfgDone, 0, 10*time.Millisecond, 30); err != nil {
			return fmt.Errorf("i219: ME did not leave ULP: %w", err)
		}
		d.wr(d.m.h2me, d.rd(d.m.h2me)&^h2meEnforce)
		return nil
	}
	if err := d.acquireSWFlag(); err != nil {
		return err
	}
	defer d.releaseSWFlag()
	// control:i219-ulp-no-lanphypc
	d.toggleLANPHYPC()
	smb, err := d.readPHYPage(smbCtrlPage, smbCtrlReg)
	if err != nil {
		// The MAC may be talking PCIe-mode MDIO to a PHY on SMBus: force
		// SMBus for the access.
		d.setForceSMBus(true)
		d.clk.Sleep(50 * time.Millisecond)
		if smb, err = d.readPHYPage(smbCtrlPage, smbCtrlReg); err != nil {
			return fmt.Errorf("i219: forcing ULP off: %w", err)
		}
	}
	if err := d.writePHYPage(smbCtrlPage, smbCtrlReg, smb&^smbCtrlForce); err != nil {
		return err
	}
	d.setForceSMBus(false)
	v, err := d.readPHYPage(ulpConfig1Page, ulpConfig1Reg)
	if err != nil {
		return fmt.Errorf("i219: ULP config: %w", err)
	}
	v &^= ulpAllTriggers
	if err := d.writePHYPage(ulpConfig1Page, ulpConfig1Reg, v); err != nil {
		return err
	}
	if err := d.writePHYPage(ulpConfig1Page, ulpConfig1Reg, v|ulpStart); err != nil {
		return err
	}
	d.wr(d.m.fextnvm7, d.rd(d.m.fextnvm7)&^fext7NoSMBPerst)
	return nil
}

// toggleLANPHYPC power-cycles the PHY through the LANPHYPC pin: drive it low
// under software override, release it, and wait for CTRL_EXT.LPCD (LPT and
// later signal the end of the cycle there). This is how a PHY stuck in ULP
// or on SMBus is recovered when the ME is absent.
func (d *dev) toggleLANPHYPC() {
	c := d.rd(regCTRL)
	c |= ctrlLANPHYPCOvr
	c &^= ctrlLANPHYPCValue
	d.wr(regCTRL, c)
	d.flush()
	d.clk.Sleep(10 * time.Microsecond)
	c &^= ctrlLANPHYPCOvr
	d.wr(regCTRL, c)
	d.flush()
	for i := 0; i < 20; i++ {
		d.clk.Sleep(5 * time.Millisecond)
		if d.rd(regCTRLEXT)&ctrlExtLPCD != 0 {
			break
		}
	}
	d.clk.Sleep(30 * time.Millisecond)
}

func (d *dev) setForceSMBus(on bool) {
	v := d.rd(regCTRLEXT)
	if on {
		v |= ctrlExtForceSMBus
	} else {
		v &^= ctrlExtForceSMBus
	}
	d.wr(regCTRLEXT, v)
	d.flush()
}

// recoverPHY makes the PCH's PHY answer on MDIO, in Intel's order: if it is
// silent, force the MAC to SMBus (the PHY may be listening there only) and,
// if it then answers, tell it to leave SMBus; if it is still silent and
// the firmware does not block PHY resets, toggle LANPHYPC, which also
// brings the PHY out of SMBus mode, and release the force. The caller
// holds the semaphore.
func (d *dev) recoverPHY() error {
	if d.phyAccessible() {
		return nil
	}
	d.setForceSMBus(true)
	d.clk.Sleep(50 * time.Millisecond)
	if d.phyAccessible() {
		if v, err := d.readPHYPage(smbCtrlPage, smbCtrlReg); err == nil {
			_ = d.writePHYPage(smbCtrlPage, smbCtrlReg, v&^smbCtrlForce)
		}
	} else {
		if d.meValid() && d.rd(d.m.fwsm)&fwsmRSPCIPHY == 0 {
			return fmt.Errorf("%w: firmware blocks PHY reset and the PHY is silent", ErrPHY)
		}
		d.toggleLANPHYPC()
	}
	d.setForceSMBus(false)
	d.clk.Sleep(50 * time.Millisecond)
	if !d.phyAccessible() {
		return fmt.Errorf("%w: silent after SMBus and LANPHYPC recovery", ErrPHY)
	}
	return nil
}

// sptTxErrata applies the Sunrise Point silicon errata settings (I218/I219
// specification update): IOSFPC.RDMTS_HEX against data corruption, and
// TARC0 at two outstanding descriptor requests instead of three against a
// buffer overrun that hangs TX. Later PCHs have the fix in silicon.
func (d *dev) sptTxErrata() {
	d.wr(d.m.iosfpc, d.rd(d.m.iosfpc)|iosfpcRDMTSHex)
	d.wr(regTARC0, d.rd(regTARC0)&^tarc0CBMultiQ3|tarc0CBMultiQ2)
}

// legacyIntxClocks keeps the side clock and the IOSF sideband clock running
// (FEXTNVM7, FEXTNVM9) on SPT and later when legacy INTx delivers the
// interrupts: with those clocks gated an INTx assertion can be lost.
func (d *dev) legacyIntxClocks() {
	d.wr(d.m.fextnvm7, d.rd(d.m.fextnvm7)|fext7SideClkUngate)
	d.wr(d.m.fextnvm9, d.rd(d.m.fextnvm9)|fext9IOSFClkGate|fext9IOSFClkReq)
}

// disableEEE turns off Energy Efficient Ethernet advertisement in the PHY
// (EMI register 0x8001). Low Power Idle adds wake-up latency to the first
// frame after a pause, which a bench of connection ramp-up would measure as
// part of the transport; the 82574L model has no EEE, so both variants
// behave alike. The caller holds the semaphore.
func (d *dev) disableEEE() error {
	if err := d.writePHYPage(0, phyEMIAddr, emiEEEAdvert); err != nil {
		return err
	}
	return d.writePHYPage(0, phyEMIData, 0)
}
