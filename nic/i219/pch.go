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

// flushRings drains the rings the card thinks are in use: one dummy 512-byte
// TX descriptor pushed through an enabled transmitter, and then, if the
// flag is still up, the RX ring is enabled briefly with thresholds that make
// the card fetch and write back at once.
func (d *dev) flushRings(tx *txRing) {
	if !d.flushRequired() {
		return
	}
	// TX flush: the card must have something to send.
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
	// RX flush: disable, then re-enable with prefetch/host/write-back
	// thresholds that force an immediate fetch and write-back.
	rctl := d.rd(regRCTL)
	d.wr(regRCTL, rctl&^rctlEN)
	d.flush()
	d.clk.Sleep(150 * time.Microsecond)
	rx := d.rd(regRXDCTL)
	rx = rx&^0x3FFF3F | 0x1F | 1<<8 | dctlWThresh1 | dctlGran
	d.wr(regRXDCTL, rx)
	d.wr(regRCTL, rctl|rctlEN)
	d.flush()
	d.clk.Sleep(150 * time.Microsecond)
	d.wr(regRCTL, rctl&^rctlEN)
}

// meValid reports whether the ME firmware runs (FWSM.FW_VALID).
func (d *dev) meValid() bool { return d.rd(regFWSM)&fwsmFWValid != 0 }

// disableULP takes the PHY out of Ultra Low Power. I218/I219 PHYs enter ULP
// on cable disconnect or Sx and then do not answer MDIO. With the ME
// running, only the ME may reconfigure the PHY: ask it through H2ME and
// wait for FWSM.ULP_CFG_DONE. Without the ME, the driver does it: cycle
// LANPHYPC if the PHY is silent, move it off SMBus, and clear the ULP
// configuration in PHY page 779.
func (d *dev) disableULP() error {
	if d.meValid() {
		h := d.rd(regH2ME)
		d.wr(regH2ME, (h&^h2meULP)|h2meEnforce)
		if err := d.waitReg(regFWSM, fwsmULPCfgDone, 0, 10*time.Millisecond, 250); err != nil {
			return fmt.Errorf("i219: ME did not leave ULP: %w", err)
		}
		d.wr(regH2ME, d.rd(regH2ME)&^h2meEnforce)
		return nil
	}
	if err := d.acquireSWFlag(); err != nil {
		return err
	}
	defer d.releaseSWFlag()
	if !d.phyAccessible() {
		d.toggleLANPHYPC()
	}
	d.setForceSMBus(false)
	v, err := d.readPHYPage(ulpConfig1Page, ulpConfig1Reg)
	if err != nil {
		return fmt.Errorf("i219: ULP config: %w", err)
	}
	v &^= ulpIndOnLinkDown | ulpInbandExit | ulpWOLHost | ulpResetToSMBus | ulpDisableSMBPerst
	if err := d.writePHYPage(ulpConfig1Page, ulpConfig1Reg, v); err != nil {
		return err
	}
	// Commit: the START bit latches the new ULP configuration.
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
// silent, force SMBus mode (the PHY may be listening there only); if still
// silent and the firmware does not block PHY resets, toggle LANPHYPC, which
// also brings the PHY out of SMBus mode, then release the force. The caller
// holds the semaphore.
func (d *dev) recoverPHY() error {
	if d.phyAccessible() {
		return nil
	}
	d.setForceSMBus(true)
	d.clk.Sleep(50 * time.Millisecond)
	if !d.phyAccessible() {
		if d.rd(regFWSM)&fwsmRSPCIPHY == 0 && d.meValid() {
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

// spt applies the Sunrise Point (and later) settings Intel's driver makes in
// its TX and interrupt setup:
//   - IOSFPC.RDMTS and TARC0 bits: the SPT TX hang and data-corruption
//     erratum (the descriptor fetch arbitration must be compensated);
//   - with legacy INTx, keep the side clock and the IOSF sideband clock
//     running (FEXTNVM7/FEXTNVM9), or interrupts can be lost when the
//     clocks are gated.
func (d *dev) spt() {
	d.wr(d.m.iosfpc, d.rd(d.m.iosfpc)|iosfpcRDMTSHex)
	d.wr(regTARC0, d.rd(regTARC0)|tarc0CBMultiQ3)
	d.wr(d.m.fextnvm7, d.rd(d.m.fextnvm7)|fext7SideClkUngate)
	d.wr(d.m.fextnvm9, d.rd(d.m.fextnvm9)|fext9IOSFClkGate|fext9IOSFClkReq)
}

// disableEEE turns off Energy Efficient Ethernet advertisement in the PHY
// (EMI register 0x8001). Low Power Idle adds wake-up latency to the first
// frame after a pause, which a bench of connection ramp-up would measure as
// part of the transport; the 82574L model has no EEE, so both variants
// behave alike. The caller holds the semaphore.
func (d *dev) disableEEE() error {
	if err := d.writePHY(phyEMIAddr, emiEEEAdvert); err != nil {
		return err
	}
	return d.writePHY(phyEMIData, 0)
}
