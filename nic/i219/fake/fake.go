// Package fake is a register-level model of an I219 (or 82574L) for unit
// tests of the i219 driver. It models what QEMU's e1000e cannot: the ME's
// hold on the EXTCNF_CTRL.SWFLAG semaphore, FWSM.FW_VALID and ULP_CFG_DONE,
// a PHY in Ultra Low Power that answers only after a LANPHYPC toggle (or
// after the ME is asked to leave ULP), the descriptor-ring flush flag in PCI
// config 0xE4, read-to-clear ICR and statistics, MDIC PHY access with page
// select and the PCH's two PHY addresses, link state, and descriptor
// write-back for TX (DD, TDH) and extended RX descriptors.
//
// Every register access is recorded in a trace, and time is virtual: the
// Clock's Sleep advances it, so tests of waits and budgets are exact.
package fake

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/netramp/netramp/nic/i219"
)

// Register offsets and bits the model gives meaning to (Intel 82574L and
// I219 datasheets, register summaries).
const (
	CTRL     = 0x0000
	STATUS   = 0x0008
	EECD     = 0x0010 // FEXTNVM6 on the PCH
	EERD     = 0x0014 // FEXTNVM5 on the PCH
	CTRLEXT  = 0x0018
	MDIC     = 0x0020
	ICR      = 0x00C0
	ICS      = 0x00C8
	IMS      = 0x00D0
	IMC      = 0x00D8
	FEXTNVM7 = 0x00E4
	RCTL     = 0x0100
	TCTL     = 0x0400
	EXTCNF   = 0x0F00
	IOSFPC   = 0x0F28
	RDBAL    = 0x2800
	RDBAH    = 0x2804
	RDLEN    = 0x2808
	RDH      = 0x2810
	RDT      = 0x2818
	RXDCTL   = 0x2828
	TDBAL    = 0x3800
	TDBAH    = 0x3804
	TDLEN    = 0x3808
	TDH      = 0x3810
	TDT      = 0x3818
	TARC0    = 0x3840
	CRCERRS  = 0x4000
	MPC      = 0x4010
	GPRC     = 0x4074
	GPTC     = 0x4080
	RNBC     = 0x40A0
	RXCSUM   = 0x5000
	RFCTL    = 0x5008
	RAL0     = 0x5400
	RAH0     = 0x5404
	H2ME     = 0x5B50
	FWSM     = 0x5B54
	FEXTNVM9 = 0x5BB4
	FEXTNV11 = 0x5BBC

	ctrlGIOMasterDis = 1 << 2
	ctrlLANPHYPCOvr  = 1 << 16
	ctrlLANPHYPCVal  = 1 << 17
	ctrlRST          = 1 << 26
	ctrlPHYRST       = 1 << 31
	statusLU         = 1 << 1
	statusFD         = 1 << 0
	statusLANInit    = 1 << 9
	statusGIOMaster  = 1 << 19
	extLPCD          = 1 << 2
	extForceSMBus    = 1 << 11
	swFlag           = 1 << 5
	fwsmRSPCIPHY     = 1 << 6
	fwsmULPCfgDone   = 1 << 10
	fwsmFWValid      = 1 << 15
	h2meULP          = 1 << 11
	h2meEnforce      = 1 << 12
	eecdAutoRd       = 1 << 9
	rctlEN           = 1 << 1
	rctlSBP          = 1 << 2
	tctlEN           = 1 << 1
	rfctlEXTEN       = 1 << 15
	rxcsumIPOFL      = 1 << 8
	rxcsumTUOFL      = 1 << 9
	icrTXDW          = 1 << 0
	icrLSC           = 1 << 2
	icrRXO           = 1 << 6
	icrRXT0          = 1 << 7
	mdicReady        = 1 << 28
	mdicError        = 1 << 30

	// PCI config.
	CfgCommand        = 0x04
	CfgDescRingStatus = 0xE4
	FlushDescRequired = 1 << 8
)

// Options describe the card being modelled.
type Options struct {
	DeviceID uint16  // default 0x15B8 (I219-V, Sunrise Point)
	MAC      [6]byte // default 02:00:00:00:02:19; loaded into RAL0/RAH0 at reset
	// ME is whether the Management Engine firmware runs (FWSM.FW_VALID).
	ME bool
	// MEHoldsSWFlag makes the ME own EXTCNF_CTRL.SWFLAG for this many reads
	// of EXTCNF_CTRL at the start; writes of SWFLAG do not stick meanwhile.
	MEHoldsSWFlag int
	// PHYInULP starts the PHY in Ultra Low Power: it does not answer MDIO
	// until LANPHYPC is toggled or (with the ME) H2ME asks to leave ULP.
	PHYInULP bool
	// PHYOnSMBus starts the PHY in SMBus mode: it answers MDIO only while
	// the MAC forces SMBus (CTRL_EXT.FORCE_SMBUS), until told to leave
	// through CV_SMB_CTRL or power-cycled by LANPHYPC.
	PHYOnSMBus bool
	// FlushRequired sets config 0xE4 bit 8 until a TX descriptor is fetched
	// with the transmitter enabled (and, with FlushNeedsRX, until the
	// receiver is enabled once more).
	FlushRequired, FlushNeedsRX bool
	// LinkDown starts with no cable; otherwise the link comes up when
	// autonegotiation is restarted.
	LinkDown bool
	// RXFifoFrames is how many received frames the card holds while it has
	// no free descriptor before it misses them (MPC). Default 4.
	RXFifoFrames int
	// MACOnlyInEEPROM leaves RAL0/RAH0 empty at reset (82574L): the MAC
	// address must then be read through EERD.
	MACOnlyInEEPROM bool
	// MEIgnoresULPExit makes the ME never answer the H2ME request to leave
	// ULP (FWSM.ULP_CFG_DONE stays set).
	MEIgnoresULPExit bool
	// Dead makes every register read 0xFFFFFFFF, as a card in D3 or with
	// memory decoding off does.
	Dead bool
	// StaleRing leaves TDLEN non-zero and TDBAL at a foreign address at
	// power-on, as firmware or a previous OS would.
	StaleRing bool
}

// Access is one register access in the trace.
type Access struct {
	Write bool
	Off   uint32
	Val   uint32
}

func (a Access) String() string {
	if a.Write {
		return fmt.Sprintf("W %#05x=%#08x", a.Off, a.Val)
	}
	return fmt.Sprintf("R %#05x=%#08x", a.Off, a.Val)
}

// RXFrame is a frame arriving from the wire, with what the card would find.
type RXFrame struct {
	Data []byte
	// CRCError: the FCS was bad. The card counts it in CRCERRS and drops
	// it (it stores it, with the CE error bit, only if RCTL.SBP is set).
	CRCError bool
	// Errors are extra error bits forced into the write-back (bits 24-31
	// of the extended status/error word), e.g. 1<<31 for RXE.
	Errors uint32
	// NoChecksum: the card does not validate checksums (IXSM set).
	NoChecksum bool
}

// Device is the modelled card. Its Platform method returns what the driver
// opens.
type Device struct {
	opt Options
	Clk *Clock

	mu      sync.Mutex
	regs    map[uint32]uint32
	cfg     [256]byte
	dma     dmaSpace
	trace   []Access
	pending []RXFrame
	sent    [][]byte

	meHolds    int
	phyULP     bool
	released   bool
	phySMBus   bool
	lanphypcLo bool
	ulpExitIn  int // FWSM reads until the ME finishes leaving ULP
	flush      bool
	flushRX    bool
	link       bool
	cable      bool
	txStalled  bool
	phy        map[uint32]uint16 // page<<16 | reg
	phyPage    map[uint32]uint32 // per PHY address
	emiAddr    uint16
	emi        map[uint16]uint16

	// Violations lists rule breaks the model saw: MDIC on the PCH without
	// SWFLAG, a PHY access at the wrong address, DMA outside allocated
	// memory.
	Violations []string
}

// New returns a card in its power-on state.
func New(opt Options) *Device {
	if opt.DeviceID == 0 {
		opt.DeviceID = 0x15B8
	}
	if opt.MAC == ([6]byte{}) {
		opt.MAC = [6]byte{0x02, 0, 0, 0, 0x02, 0x19}
	}
	if opt.RXFifoFrames == 0 {
		opt.RXFifoFrames = 4
	}
	d := &Device{opt: opt, Clk: NewClock(), regs: map[uint32]uint32{}, phy: map[uint32]uint16{},
		phyPage: map[uint32]uint32{}, emi: map[uint16]uint16{}}
	binary.LittleEndian.PutUint16(d.cfg[0:], 0x8086)
	binary.LittleEndian.PutUint16(d.cfg[2:], opt.DeviceID)
	d.meHolds = opt.MEHoldsSWFlag
	d.phyULP = opt.PHYInULP
	d.phySMBus = opt.PHYOnSMBus
	d.flush = opt.FlushRequired
	d.flushRX = opt.FlushNeedsRX
	d.cable = !opt.LinkDown
	d.powerOn()
	if opt.StaleRing {
		d.regs[TDBAL] = 0xDEAD0000
		d.regs[TDLEN] = 4096
	}
	d.dma.next = 1 << 32
	d.emi[0x8001] = 0x0006 // EEE advertised for 100 and 1000 Mb/s, the NVM default
	return d
}

// Interrupt is an interrupt source for the fake: it fires when ICR has a
// cause that IMS enables. Wait advances virtual time.
type Interrupt struct{ D *Device }

// Wait implements i219.Interrupt.
func (q Interrupt) Wait(timeout time.Duration) (bool, error) {
	q.D.mu.Lock()
	fired := q.D.regs[ICR]&q.D.regs[IMS] != 0
	q.D.mu.Unlock()
	if !fired {
		q.D.Clk.Sleep(timeout)
	}
	return fired, nil
}

// Ack implements i219.Interrupt.
func (q Interrupt) Ack() error { return nil }

func (d *Device) pch() bool { return d.opt.DeviceID != 0x10D3 }

// powerOn sets the registers a reset restores.
func (d *Device) powerOn() {
	m := d.opt.MAC
	keep := map[uint32]uint32{}
	for _, off := range []uint32{CRCERRS, MPC, RNBC, GPRC, GPTC, H2ME, FWSM} {
		if v, ok := d.regs[off]; ok {
			keep[off] = v
		}
	}
	d.regs = map[uint32]uint32{}
	for k, v := range keep {
		d.regs[k] = v
	}
	d.regs[CTRL] = 0x00140240
	if !d.opt.MACOnlyInEEPROM {
		d.regs[RAL0] = uint32(m[0]) | uint32(m[1])<<8 | uint32(m[2])<<16 | uint32(m[3])<<24
		d.regs[RAH0] = uint32(m[4]) | uint32(m[5])<<8 | 1<<31
	}
	if d.pch() {
		fw := uint32(fwsmRSPCIPHY)
		if d.opt.ME {
			fw |= fwsmFWValid
			if d.phyULP {
				fw |= fwsmULPCfgDone
			}
		}
		d.regs[FWSM] = fw
		d.regs[STATUS] = statusLANInit | statusGIOMaster
	} else {
		d.regs[EECD] = eecdAutoRd
		d.regs[STATUS] = statusGIOMaster
	}
	d.updateStatus()
}

func (d *Device) updateStatus() {
	s := d.regs[STATUS] &^ (statusLU | statusFD)
	if d.link {
		s |= statusLU | statusFD
	}
	d.regs[STATUS] = s
}

// ---- Platform ----

// Platform returns the driver's view of the card: registers, config space,
// DMA memory and the virtual clock. No interrupt source: the driver polls.
func (d *Device) Platform() i219.Platform {
	return i219.Platform{Regs: regs{d}, Config: config{d}, DMA: &d.dma, Clock: d.Clk, Close: d.release}
}

// release is the platform's Close: after it, any register access is a
// use of an unmapped BAR and is recorded as a violation.
func (d *Device) release() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.released = true
	return nil
}

type regs struct{ d *Device }

func (r regs) Read32(off uint32) uint32 {
	d := r.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.released {
		d.Violations = append(d.Violations, fmt.Sprintf("read of %#x after the platform was closed", off))
	}
	v := d.read(off)
	if d.opt.Dead {
		v = 0xFFFFFFFF
	}
	d.trace = append(d.trace, Access{Off: off, Val: v})
	d.deliver()
	return v
}

func (r regs) Write32(off uint32, v uint32) {
	d := r.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.released {
		d.Violations = append(d.Violations, fmt.Sprintf("write of %#x after the platform was closed", off))
	}
	d.trace = append(d.trace, Access{Write: true, Off: off, Val: v})
	d.write(off, v)
	d.deliver()
}

func (d *Device) read(off uint32) uint32 {
	switch off {
	case ICR:
		v := d.regs[ICR]
		d.regs[ICR] = 0
		return v
	case CRCERRS, MPC, RNBC, GPRC, GPTC:
		v := d.regs[off]
		d.regs[off] = 0
		return v
	case EXTCNF:
		v := d.regs[EXTCNF]
		if d.pch() && d.meHolds > 0 {
			d.meHolds--
			return v | swFlag
		}
		return v
	case FWSM:
		if d.ulpExitIn > 0 {
			d.ulpExitIn--
			if d.ulpExitIn == 0 {
				d.phyULP = false
				d.regs[FWSM] &^= fwsmULPCfgDone
			}
		}
		return d.regs[FWSM]
	case STATUS:
		d.updateStatus()
	}
	return d.regs[off]
}

func (d *Device) write(off, v uint32) {
	switch off {
	case CTRL:
		d.writeCTRL(v)
		return
	case STATUS:
		// Software clears LAN_INIT_DONE and PHYRA by writing them 0.
		d.regs[STATUS] &= v | ^uint32(statusLANInit|1<<10)
		return
	case ICR:
		d.regs[ICR] &^= v
		return
	case ICS:
		d.regs[ICR] |= v
		return
	case IMS:
		d.regs[IMS] |= v
		return
	case IMC:
		d.regs[IMS] &^= v
		return
	case EXTCNF:
		if d.pch() && d.meHolds > 0 {
			v &^= swFlag
		}
	case MDIC:
		d.regs[MDIC] = d.mdic(v)
		return
	case H2ME:
		d.regs[H2ME] = v
		if d.opt.ME && !d.opt.MEIgnoresULPExit && v&h2meEnforce != 0 && v&h2meULP == 0 && d.regs[FWSM]&fwsmULPCfgDone != 0 {
			d.ulpExitIn = 3 // the ME takes a few polls
		}
		return
	case TDT:
		d.regs[TDT] = v
		d.runTX()
		return
	case EERD:
		if d.pch() {
			break // FEXTNVM5 on the PCH: plain storage
		}
		// EEPROM read: address in bits 2-15, START bit 0; DONE bit 1 and
		// the word in bits 16-31. Words 0-2 hold the MAC address.
		addr := v >> 2 & 0x3FFF
		var w uint32
		if addr < 3 {
			w = uint32(d.opt.MAC[2*addr]) | uint32(d.opt.MAC[2*addr+1])<<8
		}
		d.regs[EERD] = v&0xFFFC | 1<<1 | w<<16
		return
	case RDT:
		d.regs[RDT] = v
		return
	case RCTL:
		if d.flush && d.flushRX && v&rctlEN != 0 && d.regs[RCTL]&rctlEN == 0 && d.txFlushed() {
			d.flush = false
		}
	case TCTL:
		d.regs[TCTL] = v
		d.runTX()
		return
	case CTRLEXT:
		// LPCD is write-one-to-clear; keep it unless written as 1.
		lp := d.regs[CTRLEXT] & extLPCD
		if v&extLPCD != 0 {
			lp = 0
		}
		d.regs[CTRLEXT] = v&^extLPCD | lp
		return
	}
	d.regs[off] = v
}

func (d *Device) txFlushed() bool { return d.regs[TDH] != 0 }

func (d *Device) writeCTRL(v uint32) {
	old := d.regs[CTRL]
	if v&ctrlRST != 0 {
		if d.pch() && d.regs[EXTCNF]&swFlag == 0 {
			d.Violations = append(d.Violations, "CTRL.RST on the PCH without SWFLAG")
		}
		d.powerOn()
		return
	}
	// LANPHYPC: driving the value low under override, then releasing the
	// override, power-cycles the PHY: it leaves ULP and SMBus.
	if v&ctrlLANPHYPCOvr != 0 && v&ctrlLANPHYPCVal == 0 {
		d.lanphypcLo = true
	}
	if old&ctrlLANPHYPCOvr != 0 && v&ctrlLANPHYPCOvr == 0 && d.lanphypcLo {
		d.lanphypcLo = false
		d.phyULP = false
		d.phySMBus = false
		d.regs[CTRLEXT] |= extLPCD
	}
	if v&ctrlGIOMasterDis != 0 {
		d.regs[STATUS] &^= statusGIOMaster
	} else {
		d.regs[STATUS] |= statusGIOMaster
	}
	d.regs[CTRL] = v &^ ctrlPHYRST
}

// ---- PHY over MDIC ----

const (
	phyAddrLow  = 2
	phyAddrHigh = 1
)

func (d *Device) mdic(v uint32) uint32 {
	data := uint16(v)
	reg := v >> 16 & 0x1F
	addr := v >> 21 & 0x1F
	op := v >> 26 & 3
	fail := mdicReady | mdicError | reg<<16 | addr<<21
	if d.pch() && d.regs[EXTCNF]&swFlag == 0 {
		d.Violations = append(d.Violations, fmt.Sprintf("MDIC without SWFLAG: addr %d reg %d", addr, reg))
	}
	if d.phyULP || d.phySMBus && d.regs[CTRLEXT]&extForceSMBus == 0 {
		return fail // the PHY does not answer on MDIO
	}
	// Registers 0-15 are the same on every page; 16-30 are paged.
	page := uint32(0)
	if reg > 15 && reg != 31 {
		page = d.phyPage[addr]
	}
	want := uint32(1)
	if d.pch() {
		want = phyAddrLow
		if page >= 768 {
			want = phyAddrHigh
		}
		if reg == 31 && (addr == phyAddrLow || addr == phyAddrHigh) {
			want = addr
		}
	}
	if addr != want {
		d.Violations = append(d.Violations, fmt.Sprintf("PHY reg %d (page %d) accessed at address %d, want %d", reg, page, addr, want))
		return fail
	}
	key := page<<16 | reg
	switch op {
	case 1: // write
		switch {
		case reg == 31:
			d.phyPage[addr] = uint32(data) >> 5
		case page == 0 && reg == 0x10:
			d.emiAddr = data
		case page == 0 && reg == 0x11:
			d.emi[d.emiAddr] = data
		case page == 0 && reg == 0 && data&(1<<9) != 0:
			d.phy[key] = data &^ (1 << 9)
			d.autoneg()
		case page == 769 && reg == 23:
			d.phy[key] = data
			if data&1 == 0 {
				d.phySMBus = false // CV_SMB_CTRL: leave SMBus mode
			}
		default:
			d.phy[key] = data
		}
		return mdicReady | v&0x03FFFFFF
	case 2: // read
		var out uint16
		switch {
		case page == 0 && reg == 2:
			out = 0x0154
			if !d.pch() {
				out = 0x0141
			}
		case page == 0 && reg == 3:
			out = 0x15A0
			if !d.pch() {
				out = 0x0CB1
			}
		case page == 0 && reg == 1:
			out = 0x7949
			if d.link {
				out |= 1<<5 | 1<<2
			}
		case page == 0 && reg == 0x11:
			out = d.emi[d.emiAddr]
		default:
			out = d.phy[key]
		}
		return mdicReady | v&0x0FFF0000 | uint32(out)
	}
	return fail
}

func (d *Device) autoneg() {
	if d.cable && !d.link {
		d.link = true
		d.regs[ICR] |= icrLSC
	}
	d.updateStatus()
}

// ---- PCI config ----

type config struct{ d *Device }

func (c config) ReadConfig16(off uint32) (uint16, error) {
	v, err := c.ReadConfig32(off &^ 3)
	return uint16(v >> (8 * (off & 2))), err
}

func (c config) WriteConfig16(off uint32, v uint16) error {
	d := c.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if off+2 > 256 {
		return fmt.Errorf("fake: config offset %#x", off)
	}
	binary.LittleEndian.PutUint16(d.cfg[off:], v)
	return nil
}

func (c config) ReadConfig32(off uint32) (uint32, error) {
	d := c.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if off+4 > 256 {
		return 0, fmt.Errorf("fake: config offset %#x", off)
	}
	v := binary.LittleEndian.Uint32(d.cfg[off:])
	if off == CfgDescRingStatus && d.flush {
		v |= FlushDescRequired
	}
	return v, nil
}

func (c config) WriteConfig32(off uint32, v uint32) error {
	d := c.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if off+4 > 256 {
		return fmt.Errorf("fake: config offset %#x", off)
	}
	binary.LittleEndian.PutUint32(d.cfg[off:], v)
	return nil
}

// ---- DMA ----

type dmaSpace struct {
	mu      sync.Mutex
	next    uint64
	regions []region
}

type region struct {
	bus uint64
	mem []byte
}

func (s *dmaSpace) AllocDMA(size, align int) (i219.DMAMemory, error) {
	if size <= 0 || align <= 0 || align&(align-1) != 0 {
		return i219.DMAMemory{}, fmt.Errorf("fake: bad DMA request size %d align %d", size, align)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	bus := (s.next + uint64(align) - 1) &^ (uint64(align) - 1)
	// Back with uint64s so atomic 32/64-bit accesses are aligned.
	words := make([]uint64, (size+7)/8)
	mem := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), size)
	s.regions = append(s.regions, region{bus: bus, mem: mem})
	s.next = bus + uint64(size) + 4096
	return i219.DMAMemory{Mem: mem, Bus: bus}, nil
}

// at returns n bytes at bus address a, or nil if unmapped.
func (s *dmaSpace) at(a uint64, n int) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.regions {
		if a >= r.bus && a+uint64(n) <= r.bus+uint64(len(r.mem)) {
			o := a - r.bus
			return r.mem[o : o+uint64(n)]
		}
	}
	return nil
}

// ---- TX ----

func (d *Device) runTX() {
	if d.regs[TCTL]&tctlEN == 0 || d.txStalled {
		return
	}
	n := d.regs[TDLEN] / 16
	if n == 0 {
		return
	}
	base := uint64(d.regs[TDBAH])<<32 | uint64(d.regs[TDBAL])
	for d.regs[TDH] != d.regs[TDT] && d.regs[TDT] < n {
		if !d.link && !d.flush {
			return // no carrier: the card holds the frames
		}
		h := d.regs[TDH]
		desc := d.dma.at(base+uint64(h)*16, 16)
		if desc == nil {
			d.Violations = append(d.Violations, fmt.Sprintf("TX descriptor %d outside DMA memory (base %#x)", h, base))
			return
		}
		addr := binary.LittleEndian.Uint64(desc[0:])
		length := int(binary.LittleEndian.Uint16(desc[8:]))
		cmd := desc[11]
		buf := d.dma.at(addr, length)
		if buf == nil {
			d.Violations = append(d.Violations, fmt.Sprintf("TX buffer %#x+%d outside DMA memory", addr, length))
		} else if d.flush {
			d.flush = d.flushRX // the dummy flush descriptor
		} else {
			d.sent = append(d.sent, append([]byte(nil), buf...))
			d.regs[GPTC]++
		}
		if cmd&(1<<3) != 0 { // RS: report status
			atomic.StoreUint32((*uint32)(unsafe.Pointer(&desc[12])), uint32(desc[12])|1)
		}
		d.regs[TDH] = (h + 1) % n
		d.regs[ICR] |= icrTXDW
	}
}

// ---- RX ----

// deliver writes pending frames into free RX descriptors.
func (d *Device) deliver() {
	for len(d.pending) > 0 {
		if d.regs[RCTL]&rctlEN == 0 || !d.link {
			return
		}
		n := d.regs[RDLEN] / 16
		h := d.regs[RDH]
		if n == 0 || h == d.regs[RDT] {
			return // no descriptor: frames wait in the FIFO (counted at Inject)
		}
		f := d.pending[0]
		d.pending = d.pending[1:]
		base := uint64(d.regs[RDBAH])<<32 | uint64(d.regs[RDBAL])
		desc := d.dma.at(base+uint64(h)*16, 16)
		if desc == nil {
			d.Violations = append(d.Violations, fmt.Sprintf("RX descriptor %d outside DMA memory", h))
			return
		}
		if d.regs[RFCTL]&rfctlEXTEN == 0 {
			d.Violations = append(d.Violations, "RX with legacy descriptors (RFCTL.EXTEN clear)")
		}
		addr := binary.LittleEndian.Uint64(desc[0:])
		const bufLen = 2048
		data := f.Data
		status := uint32(1<<0 | 1<<1) // DD, EOP
		if len(data) > bufLen {
			// The model stores only the first buffer's worth, without EOP,
			// and the rest in the next descriptor.
			rest := RXFrame{Data: data[bufLen:], Errors: f.Errors, NoChecksum: true}
			d.pending = append([]RXFrame{rest}, d.pending...)
			data = data[:bufLen]
			status = 1 << 0
		}
		buf := d.dma.at(addr, len(data))
		if buf == nil {
			d.Violations = append(d.Violations, fmt.Sprintf("RX buffer %#x outside DMA memory", addr))
			return
		}
		copy(buf, data)
		status |= d.checksumBits(f) | f.Errors
		if f.CRCError {
			status |= 1 << 24
		}
		binary.LittleEndian.PutUint64(desc[0:], 0)
		binary.LittleEndian.PutUint16(desc[12:], uint16(len(data)))
		binary.LittleEndian.PutUint16(desc[14:], 0)
		atomic.StoreUint32((*uint32)(unsafe.Pointer(&desc[8])), status)
		d.regs[RDH] = (h + 1) % n
		d.regs[GPRC]++
		d.regs[ICR] |= icrRXT0
	}
}

// Inject queues a frame arriving from the wire. A frame that finds no free
// descriptor waits in the FIFO (counted in RNBC); past RXFifoFrames it is
// missed (MPC).
func (d *Device) Inject(f RXFrame) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.link {
		return // no carrier, nothing arrives
	}
	if f.CRCError && d.regs[RCTL]&rctlSBP == 0 {
		d.regs[CRCERRS]++
		return
	}
	n := d.regs[RDLEN] / 16
	free := 0
	if n > 0 {
		free = int((d.regs[RDT] + n - d.regs[RDH]) % n)
	}
	if free <= len(d.pending) {
		d.regs[RNBC]++
		if len(d.pending)-free >= d.opt.RXFifoFrames {
			d.regs[MPC]++
			d.regs[ICR] |= icrRXO
			return
		}
	}
	d.pending = append(d.pending, f)
	d.deliver()
}

// checksumBits returns the status and error bits the card's checksum
// offload (RXCSUM.IPOFL/TUOFL) would write for f: IPCS for an IPv4 header,
// TCPCS or UDPCS for an unfragmented TCP or UDP payload, IPE/TCPE when a
// checksum is wrong.
func (d *Device) checksumBits(f RXFrame) uint32 {
	const (
		ixsm  = 1 << 2
		udpcs = 1 << 4
		tcpcs = 1 << 5
		ipcs  = 1 << 6
		tcpe  = 1 << 29
		ipe   = 1 << 30
	)
	rx := d.regs[RXCSUM]
	b := f.Data
	if f.NoChecksum || rx&(rxcsumIPOFL|rxcsumTUOFL) == 0 || len(b) < 34 || b[12] != 0x08 || b[13] != 0x00 {
		return ixsm
	}
	ip := b[14:]
	ihl := int(ip[0]&0xF) * 4
	total := int(binary.BigEndian.Uint16(ip[2:]))
	if ip[0]>>4 != 4 || ihl < 20 || total < ihl || total > len(ip) {
		return ixsm
	}
	var bits uint32
	if rx&rxcsumIPOFL != 0 {
		bits |= ipcs
		if onesSum(ip[:ihl], 0) != 0xFFFF {
			bits |= ipe
		}
	}
	frag := binary.BigEndian.Uint16(ip[6:])&0x3FFF != 0
	proto := ip[9]
	if rx&rxcsumTUOFL == 0 || frag || (proto != 6 && proto != 17) {
		return bits
	}
	l4 := ip[ihl:total]
	if proto == 17 && len(l4) >= 8 && binary.BigEndian.Uint16(l4[6:]) == 0 {
		return bits | udpcs // no UDP checksum sent
	}
	var ph [12]byte
	copy(ph[0:8], ip[12:20])
	ph[9] = proto
	binary.BigEndian.PutUint16(ph[10:], uint16(len(l4)))
	if proto == 6 {
		bits |= tcpcs
	} else {
		bits |= udpcs
	}
	if onesSum(l4, uint32(onesSum(ph[:], 0))) != 0xFFFF {
		bits |= tcpe
	}
	return bits
}

// onesSum is the Internet checksum's ones-complement sum (RFC 1071).
func onesSum(b []byte, init uint32) uint16 {
	s := init
	for len(b) >= 2 {
		s += uint32(b[0])<<8 | uint32(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint32(b[0]) << 8
	}
	for s > 0xFFFF {
		s = s>>16 + s&0xFFFF
	}
	return uint16(s)
}

// ---- test controls and inspection ----

// Sent returns and forgets the frames the card transmitted.
func (d *Device) Sent() [][]byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.sent
	d.sent = nil
	return s
}

// SetCable plugs or unplugs the cable; the link follows at once.
func (d *Device) SetCable(up bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cable = up
	if d.link != up {
		d.link = up
		d.regs[ICR] |= icrLSC
	}
	d.updateStatus()
	d.runTX()
}

// MEGrabSWFlag makes the ME take the semaphore for the next n reads of
// EXTCNF_CTRL.
func (d *Device) MEGrabSWFlag(n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.meHolds = n
}

// StallTX stops (or resumes) the transmit engine: TDH stays put, as in the
// I219's TX hang.
func (d *Device) StallTX(stalled bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.txStalled = stalled
	if !stalled {
		d.runTX()
	}
}

// ViolationsSoFar returns a copy of the violations, safe while the driver
// runs.
func (d *Device) ViolationsSoFar() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.Violations...)
}

// Trace returns a copy of the register accesses so far.
func (d *Device) Trace() []Access {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Access(nil), d.trace...)
}

// ClearTrace forgets the trace.
func (d *Device) ClearTrace() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.trace = nil
}

// Peek returns a register without side effects and without tracing.
func (d *Device) Peek(off uint32) uint32 {
	d.mu.Lock()
	defer d.mu.Unlock()
	if off == STATUS {
		d.updateStatus()
	}
	return d.regs[off]
}

// PHYInULP reports whether the PHY is still in Ultra Low Power.
func (d *Device) PHYInULP() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.phyULP
}

// FlushPending reports whether config 0xE4 still asks for a ring flush.
func (d *Device) FlushPending() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.flush
}

// PHYReg returns a PHY register (page, reg) as last written.
func (d *Device) PHYReg(page, reg uint32) uint16 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.phy[page<<16|reg]
}

// EMI returns an EMI register as last written through the PHY.
func (d *Device) EMI(addr uint16) uint16 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.emi[addr]
}

// Config16 returns a config-space word.
func (d *Device) Config16(off uint32) uint16 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return binary.LittleEndian.Uint16(d.cfg[off:])
}

// SetStat adds to a read-to-clear statistics register (CRCERRS, MPC, RNBC).
func (d *Device) SetStat(off uint32, add uint32) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.regs[off] += add
}

// Clock is virtual time: Sleep advances it at once (and yields, so other
// goroutines run), Now reads it.
type Clock struct {
	mu  sync.Mutex
	now time.Time
	// Slept is the total virtual time slept.
	Slept time.Duration
}

// NewClock starts at a fixed instant.
func NewClock() *Clock { return &Clock{now: time.Unix(1_700_000_000, 0)} }

// Now implements i219.Clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep implements i219.Clock: virtual time moves by d; long sleeps also
// yield the processor for a moment of real time so a polling goroutine does
// not spin.
func (c *Clock) Sleep(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.Slept += d
	c.mu.Unlock()
	if d >= time.Millisecond {
		time.Sleep(50 * time.Microsecond)
	} else {
		runtime.Gosched()
	}
}

// Advance moves virtual time without sleeping.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
