package tcp

// Sequence numbers on the wire wrap at 2^32 (RFC 9293 §3.4); inside an
// endpoint every position is a 64-bit offset from the initial sequence number
// (ISS for sending, IRS for receiving), so comparisons never wrap. Offset 0 is
// the SYN, data byte i is offset 1+i, and the FIN follows the last data byte.

// unwrap maps a wire sequence number to the offset nearest ref (within
// ±2^31), given the initial sequence number base. ok is false for an offset
// before the SYN.
func unwrap(base uint32, ref uint64, seq uint32) (off uint64, ok bool) {
	d := int64(int32(seq - (base + uint32(ref))))
	v := int64(ref) + d
	if v < 0 {
		return 0, false
	}
	return uint64(v), true
}

// wire maps an offset back to the wire.
func wire(base uint32, off uint64) uint32 { return base + uint32(off) }

func min64(a, b uint64) uint64 {
	if a < b {
		return a
	}
	return b
}

func max64(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}
