package i219

import (
	"encoding/binary"
	"math/bits"
	"sync/atomic"
	"unsafe"
)

// Descriptors are 16 bytes, little endian, in memory the card reads and
// writes by DMA. Each view wraps the 16 bytes; the word the card writes last
// (status) is read with an atomic load so the compiler neither caches nor
// reorders it, and the word the driver writes to hand a descriptor over is
// stored atomically after the others.
const descSize = 16

// Legacy TX descriptor (82574L datasheet "Legacy Transmit Descriptor
// Format"): buffer address, length, CSO, CMD, STA, CSS, special.
type txDesc []byte

const (
	txCmdEOP  = 1 << 0 // end of packet
	txCmdIFCS = 1 << 1 // insert FCS
	txCmdRS   = 1 << 3 // report status: write DD back
	txStaDD   = 1 << 0 // descriptor done
)

// set fills the descriptor for one whole frame.
func (d txDesc) set(addr uint64, length int, cmd uint8) {
	binary.LittleEndian.PutUint64(d[0:8], addr)
	// Word at 8: length (16), CSO (8), CMD (8). Word at 12: STA, CSS, special.
	binary.LittleEndian.PutUint32(d[12:16], 0)
	storeLE32(d[8:12], uint32(length)&0xFFFF|uint32(cmd)<<24)
}

func (d txDesc) done() bool { return loadLE32(d[12:16])&txStaDD != 0 }

func (d txDesc) length() int { return int(binary.LittleEndian.Uint16(d[8:10])) }

// Extended RX descriptor (82574L datasheet "Extended Receive Descriptor"):
// read format is the buffer address and a zero word; the write-back format
// puts MRQ/checksum in the first quadword, status+errors, length and VLAN
// in the second.
type rxDesc []byte

const (
	rxStaDD    = 1 << 0
	rxStaEOP   = 1 << 1
	rxStaIXSM  = 1 << 2 // ignore checksum indication
	rxStaUDPCS = 1 << 4
	rxStaTCPCS = 1 << 5
	rxStaIPCS  = 1 << 6
	rxErrCE    = 1 << 24 // CRC or alignment error
	rxErrSE    = 1 << 25 // symbol error
	rxErrSEQ   = 1 << 26 // sequence error
	rxErrCXE   = 1 << 28 // carrier extension error
	rxErrTCPE  = 1 << 29 // TCP/UDP checksum error
	rxErrIPE   = 1 << 30 // IPv4 checksum error
	rxErrRXE   = 1 << 31 // RX data error
	// rxErrFrame are errors that make the frame itself bad; TCPE/IPE only
	// say the checksum offload found a bad checksum, which the stack
	// verifies again itself.
	rxErrFrame = rxErrCE | rxErrSE | rxErrSEQ | rxErrCXE | rxErrRXE
)

// arm hands the descriptor to the card with buffer address addr.
func (d rxDesc) arm(addr uint64) {
	binary.LittleEndian.PutUint64(d[0:8], addr)
	storeLE64(d[8:16], 0)
}

func (d rxDesc) staterr() uint32 { return loadLE32(d[8:12]) }

func (d rxDesc) length() int { return int(binary.LittleEndian.Uint16(d[12:14])) }

var bigEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 0
}()

func loadLE32(b []byte) uint32 {
	v := atomic.LoadUint32((*uint32)(unsafe.Pointer(&b[0])))
	if bigEndian {
		v = bits.ReverseBytes32(v)
	}
	return v
}

func storeLE32(b []byte, v uint32) {
	if bigEndian {
		v = bits.ReverseBytes32(v)
	}
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&b[0])), v)
}

func storeLE64(b []byte, v uint64) {
	if bigEndian {
		v = bits.ReverseBytes64(v)
	}
	atomic.StoreUint64((*uint64)(unsafe.Pointer(&b[0])), v)
}
