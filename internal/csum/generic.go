package csum

import (
	"encoding/binary"
	"math/bits"
)

// sumGeneric is kernel in Go: 64-bit little-endian words added with carry,
// eight to an iteration so the carry stays in the flags between them (the
// compiler keeps a chain of bits.Add64 in one add-with-carry chain), then
// the rest at the offsets it holds in b (an odd last byte is a word's low
// half in little-endian order, its high half once swapped).
func sumGeneric(b []byte) uint64 {
	var acc, c uint64
	for len(b) >= 64 {
		w := b[:64:64]
		acc, c = bits.Add64(acc, binary.LittleEndian.Uint64(w[0:]), c)
		acc, c = bits.Add64(acc, binary.LittleEndian.Uint64(w[8:]), c)
		acc, c = bits.Add64(acc, binary.LittleEndian.Uint64(w[16:]), c)
		acc, c = bits.Add64(acc, binary.LittleEndian.Uint64(w[24:]), c)
		acc, c = bits.Add64(acc, binary.LittleEndian.Uint64(w[32:]), c)
		acc, c = bits.Add64(acc, binary.LittleEndian.Uint64(w[40:]), c)
		acc, c = bits.Add64(acc, binary.LittleEndian.Uint64(w[48:]), c)
		acc, c = bits.Add64(acc, binary.LittleEndian.Uint64(w[56:]), c)
		b = b[64:]
	}
	for len(b) >= 8 {
		acc, c = bits.Add64(acc, binary.LittleEndian.Uint64(b), c)
		b = b[8:]
	}
	if len(b) >= 4 {
		acc, c = bits.Add64(acc, uint64(binary.LittleEndian.Uint32(b)), c)
		b = b[4:]
	}
	if len(b) >= 2 {
		acc, c = bits.Add64(acc, uint64(binary.LittleEndian.Uint16(b)), c)
		b = b[2:]
	}
	if len(b) == 1 {
		acc, c = bits.Add64(acc, uint64(b[0]), c)
	}
	// control:internal-csum-generic-carry-dropped
	return add64(acc, c)
}
