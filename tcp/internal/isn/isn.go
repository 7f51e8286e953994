// Package isn generates initial sequence numbers as RFC 6528 §3 specifies:
// ISN = M + F(localip, localport, remoteip, remoteport, secretkey), where M
// is a timer ticking every 4 microseconds and F a keyed hash (here SHA-256
// over the secret and the 4-tuple), so an off-path attacker cannot predict a
// connection's ISN and a reused 4-tuple still gets a rising one.
package isn

import (
	"crypto/sha256"
	"encoding/binary"
	"time"
)

// Tuple identifies a connection; addresses are 16 bytes (IPv4 mapped into
// IPv6 by the caller, or zero-padded).
type Tuple struct {
	SrcAddr, DstAddr [16]byte
	SrcPort, DstPort uint16
}

// AppendBinary appends the tuple's fixed 36-byte encoding to b.
func (t Tuple) AppendBinary(b []byte) []byte {
	b = append(b, t.SrcAddr[:]...)
	b = append(b, t.DstAddr[:]...)
	b = binary.BigEndian.AppendUint16(b, t.SrcPort)
	return binary.BigEndian.AppendUint16(b, t.DstPort)
}

// Tick is RFC 6528 §3's timer period for M.
const Tick = 4 * time.Microsecond

// Generator holds the secret key.
type Generator struct {
	secret [16]byte
}

// New returns a generator keyed by secret, which the caller draws from a
// cryptographic source once per stack (RFC 6528 §3: changing it while the
// stack runs would break the monotonic rise per 4-tuple).
func New(secret [16]byte) *Generator { return &Generator{secret: secret} }

// ISN is the initial sequence number for a connection with this 4-tuple
// opened at now (a duration since the caller's origin).
func (g *Generator) ISN(id Tuple, now time.Duration) uint32 {
	var buf [16 + 36]byte
	b := append(buf[:0], g.secret[:]...)
	b = id.AppendBinary(b)
	sum := sha256.Sum256(b)
	f := binary.BigEndian.Uint32(sum[:4])
	m := uint32(uint64(now/Tick) & 0xffffffff)
	return f + m
}
