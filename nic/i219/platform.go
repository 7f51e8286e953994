package i219

import (
	"runtime"
	"time"
)

// Registers is the card's BAR0 memory window. Offsets are bytes from the start
// of BAR0; every access is one aligned 32-bit load or store.
//
// Write32 must store without reading first: ICR and the statistics registers
// clear when read, so a read-modify-write at the bus would lose events and
// counts. A backend over mmap therefore stores through a plain pointer, never
// through an exchange instruction. Write32 must also make the CPU's earlier
// stores to DMA memory visible to the card first (a tail write hands
// descriptors over): free on x86, a DMB before the store on arm64.
type Registers interface {
	Read32(off uint32) uint32
	Write32(off uint32, v uint32)
}

// PCIConfig is the card's PCI configuration space. The driver uses it for bus
// mastering and INTx masking (the command register at 0x04) and, on the
// I219, for the descriptor-ring flush status at 0xE4.
type PCIConfig interface {
	ReadConfig16(off uint32) (uint16, error)
	WriteConfig16(off uint32, v uint16) error
	ReadConfig32(off uint32) (uint32, error)
	WriteConfig32(off uint32, v uint32) error
}

// DMAMemory is one physically contiguous block the card can reach: Mem is the
// CPU's view, Bus the address the card must use for Mem[0].
type DMAMemory struct {
	Mem []byte
	Bus uint64
}

// DMAAllocator hands out device-reachable memory. The driver allocates once at
// Open (rings and buffers) and never in steady state.
type DMAAllocator interface {
	// AllocDMA returns size bytes, contiguous for the card, with Bus aligned
	// to align (a power of two no larger than 4096).
	AllocDMA(size, align int) (DMAMemory, error)
}

// Interrupt is an optional interrupt source. Without one the driver polls.
type Interrupt interface {
	// Wait blocks until the card raises its interrupt or timeout passes; it
	// reports whether an interrupt arrived.
	Wait(timeout time.Duration) (bool, error)
	// Ack re-arms the source after the driver has read ICR.
	Ack() error
}

// Clock is the time the driver waits on: register settle delays, the
// bounded TX retry and the TX-hang watchdog. Tests pass a virtual clock.
type Clock interface {
	Now() time.Time
	Sleep(d time.Duration)
}

// Platform is everything the driver needs from the operating system.
// Regs, Config and DMA are required; IRQ and Clock are optional.
type Platform struct {
	Regs   Registers
	Config PCIConfig
	DMA    DMAAllocator
	IRQ    Interrupt // nil: the poll loop polls
	Clock  Clock     // nil: the real clock
	// Close, if set, releases the platform's resources (mappings, file
	// descriptors); Endpoint.Close calls it after the card is quiesced.
	Close func() error
}

type realClock struct{}

func (realClock) Now() time.Time        { return time.Now() }
func (realClock) Sleep(d time.Duration) { time.Sleep(d) }

// Spin waits d by yielding in a loop. The bounded TX retry uses it for its
// 50 µs steps: time.Sleep overshoots short waits by up to a millisecond on
// Linux, which would break the 500 µs budget per batch.
func (realClock) Spin(d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		runtime.Gosched()
	}
}
