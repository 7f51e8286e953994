package fake

import "testing"

// These pin the model's own behaviour, so the driver's tests rest on a
// card that does what the datasheet says.

func TestStatisticsAndICRClearOnRead(t *testing.T) {
	d := New(Options{})
	r := d.Platform().Regs
	d.SetStat(MPC, 5)
	if r.Read32(MPC) != 5 || r.Read32(MPC) != 0 {
		t.Fatal("MPC does not clear on read")
	}
	r.Write32(ICS, 1<<2)
	if r.Read32(ICR) != 1<<2 || r.Read32(ICR) != 0 {
		t.Fatal("ICR does not clear on read")
	}
}

func TestMEHoldsSWFlag(t *testing.T) {
	d := New(Options{MEHoldsSWFlag: 2})
	r := d.Platform().Regs
	r.Write32(EXTCNF, swFlag)
	if r.Read32(EXTCNF)&swFlag == 0 {
		t.Fatal("flag not shown as held by the ME")
	}
	r.Read32(EXTCNF)
	if r.Read32(EXTCNF)&swFlag != 0 {
		t.Fatal("driver's write stuck while the ME held the flag")
	}
	r.Write32(EXTCNF, swFlag)
	if r.Read32(EXTCNF)&swFlag == 0 {
		t.Fatal("flag not taken after the ME let go")
	}
}

func mdicRead(r interface {
	Read32(uint32) uint32
	Write32(uint32, uint32)
}, addr, reg uint32) uint32 {
	r.Write32(MDIC, reg<<16|addr<<21|2<<26)
	return r.Read32(MDIC)
}

func TestULPPHYSilentUntilLANPHYPC(t *testing.T) {
	d := New(Options{PHYInULP: true})
	r := d.Platform().Regs
	r.Write32(EXTCNF, swFlag)
	if v := mdicRead(r, 2, 2); v&mdicError == 0 {
		t.Fatalf("PHY in ULP answered: %#x", v)
	}
	r.Write32(CTRL, ctrlLANPHYPCOvr)
	r.Write32(CTRL, 0)
	if v := mdicRead(r, 2, 2); v&mdicError != 0 || uint16(v) != 0x0154 {
		t.Fatalf("PHY after LANPHYPC: %#x", v)
	}
	if r.Read32(CTRLEXT)&extLPCD == 0 {
		t.Fatal("LANPHYPC cycle done not signalled")
	}
}

func TestMDICWithoutSemaphoreIsAViolation(t *testing.T) {
	d := New(Options{})
	mdicRead(d.Platform().Regs, 2, 2)
	if len(d.Violations) != 1 {
		t.Fatalf("violations %v", d.Violations)
	}
}

func TestFlushFlagClearedByTXDescriptor(t *testing.T) {
	d := New(Options{FlushRequired: true})
	p := d.Platform()
	v, _ := p.Config.ReadConfig16(CfgDescRingStatus)
	if v&FlushDescRequired == 0 {
		t.Fatal("flush flag not set")
	}
	ring, _ := p.DMA.AllocDMA(128, 128)
	buf, _ := p.DMA.AllocDMA(512, 16)
	ring.Mem[0] = byte(buf.Bus)
	for i := 1; i < 8; i++ {
		ring.Mem[i] = byte(buf.Bus >> (8 * i))
	}
	ring.Mem[8], ring.Mem[9] = 0, 2 // 512 bytes
	p.Regs.Write32(TDBAL, uint32(ring.Bus))
	p.Regs.Write32(TDBAH, uint32(ring.Bus>>32))
	p.Regs.Write32(TDLEN, 128)
	p.Regs.Write32(TCTL, tctlEN)
	p.Regs.Write32(TDT, 1)
	if v, _ := p.Config.ReadConfig16(CfgDescRingStatus); v&FlushDescRequired != 0 {
		t.Fatal("flag still set after the dummy descriptor")
	}
	if len(d.Sent()) != 0 {
		t.Fatal("the flush descriptor went out as a frame")
	}
}
