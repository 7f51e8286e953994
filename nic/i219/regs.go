package i219

// Register offsets in BAR0, named as in Intel's 82574L and I219 datasheets
// ("Register Summary" tables). Offsets that mean different registers on the
// two families are not here: they live in regMap (regmap.go), which also
// carries the PCH-only registers named below, so code reaches those only
// through the map.
const (
	regCTRL     = 0x0000 // Device Control
	regSTATUS   = 0x0008 // Device Status
	regCTRLEXT  = 0x0018 // Extended Device Control
	regMDIC     = 0x0020 // MDI Control: PHY register access
	regKMRN     = 0x0034 // Kumeran control/status (PCH MAC-PHY link)
	regICR      = 0x00C0 // Interrupt Cause Read: clears on read
	regITR      = 0x00C4 // Interrupt Throttling
	regIMS      = 0x00D0 // Interrupt Mask Set
	regIMC      = 0x00D8 // Interrupt Mask Clear
	regRCTL     = 0x0100 // Receive Control
	regFCTTV    = 0x0170 // Flow Control Transmit Timer Value
	regTCTL     = 0x0400 // Transmit Control
	regTIPG     = 0x0410 // Transmit Inter-Packet Gap
	regEXTCNF   = 0x0F00 // Extended Configuration Control (SWFLAG)
	regPHYCTRL  = 0x0F10 // PHY Control (PCH: gigabit disable, LPLU)
	regIOSFPC   = 0x0F28 // IOSF port control (SPT and later)
	regPBA      = 0x1000 // Packet Buffer Allocation
	regRDBAL    = 0x2800 // RX Descriptor Base Low
	regRDBAH    = 0x2804
	regRDLEN    = 0x2808
	regRDH      = 0x2810
	regRDT      = 0x2818
	regRDTR     = 0x2820 // RX interrupt delay
	regRXDCTL   = 0x2828
	regRADV     = 0x282C
	regTDBAL    = 0x3800 // TX Descriptor Base Low
	regTDBAH    = 0x3804
	regTDLEN    = 0x3808
	regTDH      = 0x3810
	regTDT      = 0x3818
	regTIDV     = 0x3820
	regTXDCTL   = 0x3828
	regTADV     = 0x382C
	regTARC0    = 0x3840 // TX arbitration count, queue 0
	regCRCERRS  = 0x4000 // CRC error count: clears on read
	regMPC      = 0x4010 // Missed packets: clears on read
	regGPRC     = 0x4074 // Good packets received
	regGPTC     = 0x4080 // Good packets transmitted
	regRNBC     = 0x40A0 // Receive no buffers: clears on read
	regRXCSUM   = 0x5000 // RX checksum control
	regRFCTL    = 0x5008 // RX filter control (extended descriptors)
	regMTA      = 0x5200 // Multicast table array
	regRAL0     = 0x5400 // Receive address low, entry 0
	regRAH0     = 0x5404 // Receive address high, entry 0
	regH2ME     = 0x5B50 // Host to ME (PCH)
	regFWSM     = 0x5B54 // Firmware semaphore (PCH: ME state)
	regFEXTNVM7 = 0x00E4 // PCH only
	regFEXTNVM9 = 0x5BB4 // PCH only
	regFEXT11   = 0x5BBC // FEXTNVM11, PCH only
)

// CTRL bits.
const (
	ctrlFD             = 1 << 0
	ctrlGIOMasterDis   = 1 << 2
	ctrlASDE           = 1 << 5
	ctrlSLU            = 1 << 6
	ctrlFRCSPD         = 1 << 11
	ctrlFRCDPX         = 1 << 12
	ctrlLANPHYPCOvr    = 1 << 16 // PCH: software drives LANPHYPC
	ctrlLANPHYPCValue  = 1 << 17
	ctrlRST            = 1 << 26
	ctrlRFCE           = 1 << 27
	ctrlTFCE           = 1 << 28
	ctrlPHYRST         = 1 << 31
	statusFD           = 1 << 0
	statusLU           = 1 << 1
	statusLANInitDone  = 1 << 9  // PCH: MAC finished loading from NVM after reset
	statusPHYRA        = 1 << 10 // PCH: PHY reset asserted (config not yet loaded)
	statusGIOMasterEn  = 1 << 19
	ctrlExtLPCD        = 1 << 2  // PCH LPT+: LANPHYPC cycle done
	ctrlExtForceSMBus  = 1 << 11 // PCH: keep the PHY on SMBus
	ctrlExtRODis       = 1 << 17
	ctrlExtPHYPDEn     = 1 << 20
	ctrlExtDrvLoad     = 1 << 28 // driver loaded: tells firmware the host owns the port
	ctrlExtIAME        = 1 << 27
	extcnfSWFlag       = 1 << 5 // software semaphore shared with the ME
	extcnfGatePHYCfg   = 1 << 7
	fwsmRSPCIPHY       = 1 << 6 // PHY reset is blocked by firmware when clear
	fwsmULPCfgDone     = 1 << 10
	fwsmFWValid        = 1 << 15
	h2meULP            = 1 << 11
	h2meEnforce        = 1 << 12
	fext7SideClkUngate = 1 << 2  // FEXTNVM7: keep the side clock running
	fext7NoSMBPerst    = 1 << 5  // FEXTNVM7: SMBus not released on PERST#
	fext9IOSFClkGate   = 1 << 12 // FEXTNVM9: IOSF sideband clock gating disable
	fext9IOSFClkReq    = 1 << 13 // FEXTNVM9: IOSF sideband CLKREQ disable
	fext11NoMULRFix    = 1 << 13 // FEXTNVM11: disable the multiple-request fix (ring flush)
	iosfpcRDMTSHex     = 1 << 16 // IOSFPC: RX descriptor minimum threshold in hex units, SPT erratum
	tarc0CBMultiQ3     = 3 << 28 // TARC0: up to 3 outstanding descriptor requests
	tarc0CBMultiQ2     = 2 << 28 // TARC0: up to 2 (the SPT TX-hang erratum)
	tarc0Enable        = 1 << 10
)

// MDIC fields.
const (
	mdicRegShift = 16
	mdicPHYShift = 21
	mdicOpWrite  = 1 << 26
	mdicOpRead   = 2 << 26
	mdicReady    = 1 << 28
	mdicError    = 1 << 30
)

// Interrupt cause bits (ICR/IMS/IMC).
const (
	icrTXDW   = 1 << 0 // TX descriptor written back
	icrLSC    = 1 << 2 // link status change
	icrRXDMT0 = 1 << 4 // RX descriptors below minimum threshold
	icrRXO    = 1 << 6 // receiver overrun
	icrRXT0   = 1 << 7 // RX timer
	icrAll    = 0xFFFFFFFF
)

// RCTL and TCTL bits.
const (
	rctlEN      = 1 << 1
	rctlSBP     = 1 << 2
	rctlUPE     = 1 << 3
	rctlMPE     = 1 << 4
	rctlLPE     = 1 << 5
	rctlRDMTS2  = 0 << 8 // RX desc minimum threshold: half the ring
	rctlBAM     = 1 << 15
	rctlBSZ2048 = 0 << 16
	rctlSECRC   = 1 << 26 // strip the Ethernet CRC
	tctlEN      = 1 << 1
	tctlPSP     = 1 << 3            // pad short packets
	tctlCT      = 0x0F << 4         // collision threshold
	tctlCOLD    = 0x3F << 12        // collision distance, full duplex
	tctlRTLC    = 1 << 24           // retransmit on late collision
	tipgDefault = 8 | 8<<10 | 6<<20 // IPGT, IPGR1, IPGR2 for copper (IEEE 802.3 inter-frame gap)
)

// RXDCTL / TXDCTL thresholds.
const (
	dctlGran      = 1 << 24 // thresholds count descriptors, not cache lines
	dctlWThresh1  = 1 << 16
	dctlCountDesc = 1 << 22 // 82574L: must be set
)

// RXCSUM / RFCTL bits.
const (
	rxcsumIPOFL = 1 << 8 // IPv4 header checksum offload
	rxcsumTUOFL = 1 << 9 // TCP/UDP checksum offload
	rfctlEXTEN  = 1 << 15
)

// PCI configuration space.
const (
	pciVendorID        = 0x00
	pciDeviceID        = 0x02
	pciCommand         = 0x04
	pciCmdMemory       = 1 << 1
	pciCmdMaster       = 1 << 2
	pciCmdIntxDisable  = 1 << 10
	pciDescRingStatus  = 0xE4 // I219: descriptor ring status
	pciFlushDescNeeded = 1 << 8
)

// PHY registers (IEEE 802.3 clause 22) and the vendor pages used here.
const (
	phyBMCR       = 0 // basic mode control
	phyBMSR       = 1
	phyID1        = 2
	phyID2        = 3
	phyANAR       = 4  // autonegotiation advertisement
	phyGBCR       = 9  // 1000BASE-T control
	phyPageSelect = 31 // page select on the PCH's PHY (page << 5)
	phyEMIAddr    = 0x10
	phyEMIData    = 0x11

	bmcrANRestart = 1 << 9
	bmcrANEnable  = 1 << 12
	bmcrReset     = 1 << 15
	anarAll       = 0x01E1 // 10/100 half and full, IEEE 802.3 selector
	anarPause     = 0x0C00 // symmetric and asymmetric pause
	gbcrFull      = 1 << 9

	// PCH PHY addresses: pages from 768 up answer at address 1, the rest at 2.
	pchPHYAddr         = 2
	pchPHYAddrHigh     = 1
	pchHighPageStart   = 768
	addr82574PHY       = 1
	ulpConfig1Page     = 779 // I218/I219 ULP configuration
	ulpConfig1Reg      = 16
	ulpStart           = 1 << 0
	ulpInd             = 1 << 2 // power-up-from-ULP indication
	ulpSticky          = 1 << 4
	ulpInbandExit      = 1 << 5
	ulpWOLHost         = 1 << 6
	ulpResetToSMBus    = 1 << 8
	ulpEnLANPHYPC      = 1 << 10
	ulpDisClrSticky    = 1 << 11
	ulpDisableSMBPerst = 1 << 12
	ulpAllTriggers     = ulpInd | ulpSticky | ulpInbandExit | ulpWOLHost | ulpResetToSMBus | ulpEnLANPHYPC | ulpDisClrSticky | ulpDisableSMBPerst
	smbCtrlPage        = 769 // CV_SMB_CTRL: the PHY's own SMBus force bit
	smbCtrlReg         = 23
	smbCtrlForce       = 1 << 0
	emiEEEAdvert       = 0x8001 // EMI: EEE advertisement (100/1000)
)
