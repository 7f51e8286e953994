// Package syncookie makes and checks SYN cookies (RFC 4987 §3.6): when the
// SYN queue is full, the listener encodes what it must remember into the ISN
// of its SYN-ACK and keeps no state; the ACK that completes the handshake
// returns it. A cookie holds the parity of a 64-second time slot, an MSS
// index, SACK-permitted, a window scale index, and a keyed hash of the
// 4-tuple, the peer's ISN, the slot and the rest, so a forged, edited or
// replayed-late cookie fails the check.
//
// Layout of the 32 bits: slot mod 2 (1 bit) | MSS index (3 bits) | SACK (1 bit) |
// window scale index (3 bits) | hash (24 bits, as many as Linux's cookies keep).
// One slot bit is enough: it only says which of the two live slots to hash
// with, and the hash covers the whole slot number.
//
// So a cookie connection keeps window scaling and SACK, which RFC 4987 §3.6
// names as what cookies lose. The window scale is rounded down to WSTable: a
// stated departure from RFC 7323 §2.3, which has the peer's windows read with
// the shift it sent. It is safe because a smaller shift under-reads the
// peer's window, so we send less than it allows, never more. When the SYN
// offers timestamps, the exact window scale and SACK-permitted also ride in
// the low bits of the SYN-ACK's TSval, which the ACK echoes (StampTS,
// OptionsFromEcho), and the echo is preferred.
package syncookie

import (
	"crypto/sha256"
	"encoding/binary"
	"time"

	"github.com/netramp/netramp/tcp/internal/isn"
)

// Tuple is the connection's 4-tuple, shared with package isn.
type Tuple = isn.Tuple

// Slot is the cookie's time granularity; a cookie is accepted in the slot it
// was made in and the next, so it lives between 64 and 128 seconds.
const Slot = 64 * time.Second

// MSSTable lists the MSS values a cookie can carry, ascending; Make encodes
// the largest not above the peer's MSS. The peer advertised at least the
// encoded value, so sending with it never exceeds the peer's limit.
var MSSTable = [8]uint16{216, 536, 1200, 1360, 1400, 1440, 1460, 8960}

// WSTable lists the window scale shifts a cookie can carry, ascending, -1
// (none offered) first; Make encodes the largest not above the peer's shift.
// It holds the shifts common peers send (6 macOS and BSD, 7 Linux's default,
// 8 Windows, 9 a Linux with 16 MB buffers, 14 the largest).
var WSTable = [8]int{-1, 0, 4, 6, 7, 8, 9, 14}

const (
	hashBits = 24
	wsShift  = hashBits     // window scale index, 3 bits
	sackBit  = 1 << 27      // SACK-permitted
	mssShift = hashBits + 4 // MSS index, 3 bits
	slotBit  = 1 << 31      // slot mod 2
)

// Jar holds the secret key.
type Jar struct {
	secret [32]byte
}

// New returns a jar keyed by secret (drawn once per stack from a
// cryptographic source).
func New(secret [32]byte) *Jar { return &Jar{secret: secret} }

// hash keys the 4-tuple, the peer's ISN, the slot and what the cookie
// carries (its bits above the hash).
func (j *Jar) hash(id Tuple, peerISN uint32, slot uint64, carried uint32) uint32 {
	var buf [32 + 36 + 4 + 8 + 1]byte
	b := append(buf[:0], j.secret[:]...)
	b = id.AppendBinary(b)
	b = binary.BigEndian.AppendUint32(b, peerISN)
	b = binary.BigEndian.AppendUint64(b, slot)
	// control:tcpinternal-syncookie-options-unhashed
	b = append(b, byte(carried>>hashBits&0x7f))
	sum := sha256.Sum256(b)
	return binary.BigEndian.Uint32(sum[:4]) & (1<<hashBits - 1)
}

func slotOf(now time.Duration) uint64 {
	if now < 0 {
		return 0
	}
	return uint64(now / Slot)
}

// MSSIndex is the index of the largest table entry not above mss. An MSS
// below 216 (which no IPv4 or IPv6 path forces) still gets index 0: such a
// peer's limit is exceeded while cookies are in use, a stated departure that
// keeps the index in three bits.
func MSSIndex(mss uint16) int {
	idx := 0
	for i, v := range MSSTable {
		if v <= mss {
			idx = i
		}
	}
	return idx
}

// WSIndex is the index of the largest WSTable entry not above ws: rounded
// down, so the peer's window is never read larger than it meant (-1, none
// offered, is index 0).
func WSIndex(ws int) int {
	idx := 0
	for i, v := range WSTable {
		// control:tcpinternal-syncookie-ws-rounds-up
		if v <= ws {
			idx = i
		}
	}
	return idx
}

// Make returns the cookie to use as the SYN-ACK's ISN for a SYN from id with
// sequence number peerISN, MSS option mss and options o (those we agreed
// to), at now.
func (j *Jar) Make(id Tuple, peerISN uint32, mss uint16, o Options, now time.Duration) uint32 {
	slot := slotOf(now)
	c := uint32(MSSIndex(mss))<<mssShift | uint32(WSIndex(o.WS))<<wsShift
	if o.SACK {
		c |= sackBit
	}
	if slot&1 != 0 {
		c |= slotBit
	}
	return c | j.hash(id, peerISN, slot, c)
}

// Check validates a cookie returned in an ACK (its acknowledgement number
// less one; peerISN is its sequence number less one) at now. It accepts a
// cookie made in the current or the previous slot and returns the MSS and
// the options it encodes (the window scale as WSTable rounded it).
func (j *Jar) Check(id Tuple, peerISN uint32, cookie uint32, now time.Duration) (mss uint16, o Options, ok bool) {
	cur := slotOf(now)
	// control:tcpinternal-syncookie-any-slot
	for age := uint64(0); age < 2 && age <= cur; age++ {
		slot := cur - age
		if (slot&1 != 0) != (cookie&slotBit != 0) {
			continue
		}
		if j.hash(id, peerISN, slot, cookie) == cookie&(1<<hashBits-1) {
			o = Options{WS: WSTable[cookie>>wsShift&7], SACK: cookie&sackBit != 0}
			return MSSTable[cookie>>mssShift&7], o, true
		}
	}
	return 0, Options{WS: -1}, false
}

// Options are what a cookie connection needs of the SYN beyond its MSS.
type Options struct {
	WS   int  // the peer's window scale shift, 0..14; -1 = none offered
	SACK bool // the peer offered SACK-permitted
}

// The low optBits of a cookie SYN-ACK's TSval: a marker bit, SACK, and the
// window scale in four bits (noWS = none).
const (
	optBits   = 6
	optMask   = 1<<optBits - 1
	optMarker = 1 << 5
	optSACK   = 1 << 4
	noWS      = 0xf
)

// StampTS returns the TSval of a cookie SYN-ACK: the timestamp clock tsNow
// with its low bits replaced by o, moved back one step if that put it ahead,
// so the connection's later TSvals never go back (RFC 7323 §5.4).
func StampTS(tsNow uint32, o Options) uint32 {
	bits := uint32(optMarker | noWS)
	if o.WS >= 0 {
		bits = optMarker | uint32(min(o.WS, 14))
	}
	if o.SACK {
		bits |= optSACK
	}
	ts := tsNow&^optMask | bits
	if int32(ts-tsNow) > 0 { // control:stamp-not-ahead
		ts -= 1 << optBits
	}
	return ts
}

// OptionsFromEcho reads the options back from the TSecr of a cookie's ACK at
// timestamp clock tsNow. An echo without the marker, from the future, or
// older than a cookie lives is not ours: ok is false and the connection runs
// with what the cookie itself carries.
func OptionsFromEcho(tsEcr, tsNow uint32) (o Options, ok bool) {
	age := tsNow - tsEcr
	if tsEcr&optMarker == 0 || int32(age) < 0 || age > uint32(2*Slot/time.Millisecond)+optMask {
		return Options{WS: -1}, false
	}
	o.WS = int(tsEcr & noWS)
	if o.WS == noWS {
		o.WS = -1
	}
	o.SACK = tsEcr&optSACK != 0
	return o, true
}
