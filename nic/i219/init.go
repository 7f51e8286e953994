package i219

import (
	"errors"
	"fmt"
	"time"
)

// reset brings the MAC to its power-on state, in the order of Intel's
// shared code (reset_hw): flush the rings if the I219 asks for it, mask
// interrupts, stop RX and TX, stop DMA (mastering disable), then the global
// reset under the semaphore, and wait for the NVM to load.
func (d *dev) reset(tx *txRing) error {
	// control:i219-no-ring-flush
	if d.variant >= VariantSPT {
		d.flushRings(tx)
	}
	d.wr(regIMC, icrAll)
	d.wr(regRCTL, 0)
	d.wr(regTCTL, tctlPSP)
	d.flush()
	d.clk.Sleep(10 * time.Millisecond)

	// Intel's code resets even when mastering does not stop in time: the
	// global reset stops DMA as well, only without letting requests finish.
	_ = d.disableMastering()

	ctrl := d.rd(regCTRL) | ctrlRST
	if d.variant.IsPCH() {
		if err := d.acquireSWFlag(); err != nil {
			return err
		}
		// Reset the PHY with the MAC unless firmware blocks PHY resets.
		if d.rd(d.m.fwsm)&fwsmRSPCIPHY != 0 {
			ctrl |= ctrlPHYRST
		}
	}
	d.wr(regCTRL, ctrl)
	// The reset clears SWFLAG; nothing to release.
	d.clk.Sleep(20 * time.Millisecond)

	if d.variant.IsPCH() {
		// LAN_INIT_DONE: the MAC finished reading the NVM. Clear it so the
		// next reset can be told apart, and clear PHYRA (PHY reset
		// asserted), which the PHY reset set.
		if err := d.waitReg(regSTATUS, statusLANInitDone, statusLANInitDone, 100*time.Microsecond, 1500); err != nil {
			return fmt.Errorf("i219: NVM load after reset: %w", err)
		}
		d.wr(regSTATUS, d.rd(regSTATUS)&^(statusLANInitDone|statusPHYRA))
	} else {
		if err := d.waitReg(d.m.eecd, eecdAutoRd, eecdAutoRd, time.Millisecond, 10); err != nil {
			return fmt.Errorf("i219: NVM auto-read after reset: %w", err)
		}
	}
	d.wr(regIMC, icrAll)
	d.rd(regICR)
	return nil
}

// phyWorkarounds makes the PCH's PHY usable before the first reset, where
// Intel's probe does it (init_phy_workarounds): ULP off, then, if the PHY
// is still silent, the SMBus/LANPHYPC recovery. A MAC reset that also
// resets a PHY stuck in ULP or on SMBus leaves it stuck.
func (d *dev) phyWorkarounds() error {
	if !d.variant.IsPCH() {
		return nil
	}
	// A failed ULP exit is not final, as in Intel's code: the recovery
	// below may still reach the PHY. Only a PHY that stays silent fails.
	ulpErr := d.disableULP()
	if err := d.acquireSWFlag(); err != nil {
		return errors.Join(ulpErr, err)
	}
	defer d.releaseSWFlag()
	if err := d.recoverPHY(); err != nil {
		return errors.Join(ulpErr, err)
	}
	return nil
}

// initPHY brings the link up after a reset, as Intel's setup_link does:
// the PHY must answer (on the PCH, recover it again if the reset left it
// on SMBus), K1 stays at the NVM default, EEE is turned off, then the
// advertisement and an autonegotiation restart through MDIC.
func (d *dev) initPHY() error {
	if err := d.acquireSWFlag(); err != nil {
		return err
	}
	defer d.releaseSWFlag()
	if d.variant.IsPCH() {
		if err := d.recoverPHY(); err != nil {
			return err
		}
		if err := d.disableEEE(); err != nil {
			return err
		}
	} else if !d.phyAccessible() {
		return fmt.Errorf("%w: no PHY ID at address %d", ErrPHY, d.m.phyAddr)
	}
	if err := d.writePHY(phyANAR, anarAll|anarPause); err != nil {
		return err
	}
	if err := d.writePHY(phyGBCR, gbcrFull); err != nil {
		return err
	}
	return d.writePHY(phyBMCR, bmcrANEnable|bmcrANRestart)
}

// initHW programs the MAC after reset, in the datasheet's initialisation
// order: general configuration and link, statistics, receive and transmit
// rings, then interrupts.
func (d *dev) initHW(tx *txRing, rx *rxRing) error {
	d.wr(regCTRLEXT, d.rd(regCTRLEXT)|ctrlExtDrvLoad)
	if err := d.initPHY(); err != nil {
		return err
	}
	// Link: set link up, let the MAC take speed and duplex from the PHY.
	ctrl := d.rd(regCTRL)
	ctrl |= ctrlSLU
	ctrl &^= ctrlFRCSPD | ctrlFRCDPX | ctrlLANPHYPCOvr
	d.wr(regCTRL, ctrl)
	if d.m.fcal != 0 {
		// 802.3x PAUSE: reserved multicast address and type 0x8808.
		d.wr(d.m.fcal, 0x00C28001)
		d.wr(d.m.fcah, 0x0100)
		d.wr(d.m.fct, 0x8808)
	}
	d.wr(regFCTTV, 0xFFFF)

	// Receive filters: station address, empty multicast table.
	d.setMAC()
	for i := 0; i < d.m.mtaEntries; i++ {
		d.wr(regMTA+uint32(4*i), 0)
	}
	d.clearStats()

	// Transmit.
	d.wr(regTDBAL, uint32(tx.bus))
	d.wr(regTDBAH, uint32(tx.bus>>32))
	d.wr(regTDLEN, uint32(tx.n*descSize))
	d.wr(regTDH, 0)
	d.wr(regTDT, 0)
	d.wr(regTIDV, 0)
	d.wr(regTADV, 0)
	d.wr(regTIPG, tipgDefault)
	txdctl := uint32(dctlGran | dctlWThresh1)
	if !d.variant.IsPCH() {
		txdctl |= dctlCountDesc
	}
	d.wr(regTXDCTL, txdctl)
	d.wr(regTARC0, d.rd(regTARC0)|tarc0Enable)
	// Collision threshold 15 and distance 63, the values Intel's e1000e
	// programs for every link; short frames padded (PSP).
	d.wr(regTCTL, tctlEN|tctlPSP|tctlCT|tctlCOLD|tctlRTLC)
	if d.variant == VariantSPT {
		d.sptTxErrata()
	}

	// Receive: extended descriptors (RFCTL.EXTEN), checksum offload, the
	// station address and broadcast, and every multicast frame (MPE): the
	// driver programs no multicast filter and leaves that choice to the
	// stack, so IPv6 neighbour discovery works.
	d.wr(regRDBAL, uint32(rx.bus))
	d.wr(regRDBAH, uint32(rx.bus>>32))
	d.wr(regRDLEN, uint32(rx.n*descSize))
	d.wr(regRDH, 0)
	d.wr(regRDT, 0)
	d.wr(regRDTR, 0)
	d.wr(regRADV, 0)
	d.wr(regRFCTL, d.rd(regRFCTL)|rfctlEXTEN)
	d.wr(regRXCSUM, rxcsumIPOFL|rxcsumTUOFL)
	d.wr(regRCTL, rctlEN|rctlBAM|rctlMPE|rctlBSZ2048|rctlSECRC|rctlRDMTS2)
	d.wr(regRDT, uint32(rx.armAll()))

	// Interrupts: causes the poll loop acts on, only if an IRQ source
	// exists; the poll loop reads ICR either way.
	d.wr(regIMC, icrAll)
	if d.useIRQ {
		if d.variant.IsPCH() {
			d.legacyIntxClocks()
		}
		d.wr(regITR, 0)
		d.wr(regIMS, icrRXT0|icrTXDW|icrLSC|icrRXDMT0|icrRXO)
	}
	d.flush()
	return nil
}

// clearStats reads the read-to-clear statistics once so counting starts at
// zero.
func (d *dev) clearStats() {
	d.rd(regCRCERRS)
	d.rd(regMPC)
	d.rd(regRNBC)
}

func (d *dev) linkUp() bool { return d.rd(regSTATUS)&statusLU != 0 }
