package i219

// regMap holds the offsets whose meaning depends on the MAC family. The PCH
// MACs reuse the 82574L's EEPROM and flow-control address offsets for their
// FEXTNVM feature registers, so writing an 82574L register by number on an
// I219 would change a PCH workaround bit instead. A zero offset means the
// register does not exist on this family; every use checks for it.
type regMap struct {
	variant Variant

	// 82574L only.
	eecd uint32 // 0x0010: EEPROM control (AUTO_RD after reset)
	eerd uint32 // 0x0014: EEPROM read
	fcal uint32 // 0x0028: flow control address low
	fcah uint32 // 0x002C
	fct  uint32 // 0x0030: flow control type

	// PCH (I219) only.
	fextnvm6 uint32 // 0x0010
	fextnvm5 uint32 // 0x0014
	fextnvm  uint32 // 0x0028
	fextnvm3 uint32 // 0x003C
	fextnvm7 uint32 // 0x00E4
	fextnvm9 uint32 // 0x5BB4
	fextnv11 uint32 // 0x5BBC
	iosfpc   uint32 // 0x0F28
	h2me     uint32 // 0x5B50
	fwsm     uint32 // 0x5B54

	mtaEntries int    // multicast table size in 32-bit words
	phyAddr    uint32 // PHY address for page-0 registers
}

const (
	eecdAutoRd = 1 << 9 // 82574L: NVM auto-read done
	eerdStart  = 1 << 0
	eerdDone   = 1 << 1
)

func newRegMap(v Variant) regMap {
	m := regMap{variant: v}
	if v == Variant82574 {
		m.eecd, m.eerd = 0x0010, 0x0014
		m.fcal, m.fcah, m.fct = 0x0028, 0x002C, 0x0030
		m.mtaEntries = 128
		m.phyAddr = addr82574PHY
		return m
	}
	m.fextnvm6, m.fextnvm5 = 0x0010, 0x0014
	m.fextnvm, m.fextnvm3 = 0x0028, 0x003C
	m.fextnvm7, m.fextnvm9, m.fextnv11 = regFEXTNVM7, regFEXTNVM9, regFEXT11
	m.iosfpc, m.h2me, m.fwsm = regIOSFPC, regH2ME, regFWSM
	m.mtaEntries = 32
	m.phyAddr = pchPHYAddr
	return m
}
