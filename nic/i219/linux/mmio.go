//go:build linux

package i219linux

import (
	"sync/atomic"
	"unsafe"
)

// mmio is BAR0 mapped into this process.
type mmio struct{ mem []byte }

// Read32 loads with an atomic load: on amd64 and arm64 that is one plain
// 32-bit load the compiler may neither drop, merge nor reorder.
func (m mmio) Read32(off uint32) uint32 {
	return atomic.LoadUint32((*uint32)(unsafe.Pointer(&m.mem[off])))
}

// Write32 stores through a plain pointer, never atomic.StoreUint32: on
// amd64 that compiles to XCHG, which reads the register as well, and ICR
// and the statistics registers clear when read, so a write would lose
// interrupt causes and counts. The function is kept out of line so the
// compiler cannot treat two writes to one register (a LANPHYPC toggle, a
// reset bit) as a dead store and drop the first.
//
//go:noinline
func (m mmio) Write32(off uint32, v uint32) {
	// control:i219-register-write-reads
	*(*uint32)(unsafe.Pointer(&m.mem[off])) = v
}
