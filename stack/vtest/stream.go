// Package vtest drives TCP transfers in virtual time: an event-driven source
// and sink on gVisor tcpip.Endpoints (writing when writable, reading when
// readable, from waiter callbacks, with no goroutines), and a Pair of netramp
// stacks joined by nic/wire on a vclock.Clock, so a whole transfer runs inside
// Clock.RunUntil and repeats exactly for the same configuration and seed.
//
// A typical run:
//
//	p, _ := vtest.NewPair(cfg, tcp.Options{}, tcp.Options{}, 1)
//	defer p.Close()
//	c, s, _ := p.Dial(vtest.SideA, 5001)
//	src, sink, _ := p.Transfer(c, s, 64<<20, 7, 60*time.Second)
//	// sink.Hash() == src.Hash(); sink.ReceivedBy(100*time.Millisecond) ...
//
// or, for one arm of a bench in one call:
//
//	res, err := vtest.OneTransfer(vtest.Run{Wire: cfg, Sender: tcp.Options{Arm: cc.ArmB}, Bytes: 320 << 20, Seed: 1})
//	// res.ReceivedBy(300*time.Millisecond), res.Sender["tcp.hystart.css"], res.TraceHash ...
package vtest

import (
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"math/rand/v2"
)

// Stream is the deterministic byte stream a Source sends: ChaCha8 output
// keyed by a seed, so a sink can check what it received without a copy.
type Stream struct {
	r *rand.ChaCha8
}

// NewStream returns the stream for seed, positioned at its first byte.
func NewStream(seed int64) *Stream {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], uint64(seed))
	copy(key[8:], "netramp-vtest-stream")
	return &Stream{r: rand.NewChaCha8(key)}
}

// Read fills p with the stream's next bytes; it never fails.
func (s *Stream) Read(p []byte) (int, error) { return s.r.Read(p) }

// StreamHash is the SHA-256 of the first n bytes of seed's stream.
func StreamHash(seed, n int64) [32]byte {
	s := NewStream(seed)
	h := sha256.New()
	buf := make([]byte, 256<<10)
	for n > 0 {
		k := int64(len(buf))
		if n < k {
			k = n
		}
		s.Read(buf[:k])
		h.Write(buf[:k])
		n -= k
	}
	return sum(h)
}

func sum(h hash.Hash) [32]byte {
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}
