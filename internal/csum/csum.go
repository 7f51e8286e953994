// Package csum is the Internet checksum (RFC 1071): the 16-bit one's
// complement sum of a run of bytes read as big-endian words, an odd last
// byte padded with a zero byte. TCP, IP and the links sum every payload
// byte once on the way out and once on the way in, so at a 9000-byte MTU
// this sum is the largest per-byte cost of the transport (issue 12); on
// amd64 with AVX2 it runs in assembly (sum_amd64.s), elsewhere in Go.
//
// Results are bit-identical to gVisor's checksum.Checksum and Checksumer,
// which the tests compare against, so a caller may mix the two.
//
// `go test -bench Sum ./internal/csum` on the AMD EPYC (Zen, AVX-512) dev
// machine, best of 5, buffer in cache: AVX2 80 GB/s at 1460 bytes and 100 GB/s
// at 9000 and 65536, gVisor's 24-26 GB/s, the Go kernel 19 GB/s; at 64 bytes
// all three take 5-6 ns, a call's fixed cost. Inside the stack the payload
// is rarely in cache: `osbench cpu -tso off -mtu 9000 -cores 1 -tcp netramp
// -cpuprofile` puts the sums at 9.5% of all CPU, down from gVisor's 11.9%
// (about 35 GB/s instead of 27): what is left is the cost of fetching bytes
// the sender last touched when the application wrote them.
package csum

import "math/bits"

// chunk bounds the bytes one call of a kernel sums, so that no kernel's
// accumulators can overflow (sum_amd64.s states its bound); 1 GiB costs one
// extra fold per GiB. It must be even, so each chunk starts on a word. A
// variable only so that the tests can make it small.
var chunk = 1 << 30

// Sum is the one's complement sum of b added to initial: folded to 16 bits,
// not complemented (a header's checksum field takes its complement). It is
// 0 only when initial and every byte of b are 0.
func Sum(b []byte, initial uint16) uint16 {
	return Combine(initial, sumBE(b))
}

// Combine is the one's complement sum of two 16-bit sums.
func Combine(a, b uint16) uint16 {
	s := uint32(a) + uint32(b)
	return uint16(s + s>>16)
}

// Summer sums a run of bytes handed over in pieces of any length, as a
// payload that lies in several views is: an odd-length piece leaves its last
// byte as the high half of a word the next piece's first byte completes.
// The zero value is an empty sum.
type Summer struct {
	sum uint16
	odd bool // the pieces so far hold an odd number of bytes
}

// Add sums b after the pieces added before it.
func (s *Summer) Add(b []byte) {
	x := sumBE(b)
	if s.odd {
		// b's bytes sit one place later in the run than sumBE assumed: each
		// byte it took as a word's high half is its low half and the other
		// way round, and swapping halves commutes with one's complement
		// addition (it multiplies by 2^8 modulo 0xffff).
		// control:internal-csum-odd-piece-unswapped
		x = bits.ReverseBytes16(x)
	}
	s.sum = Combine(s.sum, x)
	s.odd = s.odd != (len(b)%2 == 1)
}

// Sum is the one's complement sum of every byte added, as Sum(all, 0).
func (s *Summer) Sum() uint16 { return s.sum }

// sumBE is the one's complement sum of b's big-endian words. The kernels
// read little-endian words, whatever the machine: the one's complement sum
// of byte-swapped words is the byte-swapped sum, so one swap at the end
// gives the big-endian sum.
func sumBE(b []byte) uint16 {
	var acc uint64
	for len(b) > chunk {
		acc = add64(acc, kernel(b[:chunk]))
		b = b[chunk:]
	}
	acc = add64(acc, kernel(b))
	return bits.ReverseBytes16(fold(acc))
}

// add64 is the one's complement sum of two 64-bit partial sums: the carry
// out of the top goes back in at the bottom (2^64 is 1 modulo 0xffff).
func add64(a, b uint64) uint64 {
	s, c := bits.Add64(a, b, 0)
	return s + c // s ≤ 2^64-2 when c is 1
}

// fold reduces a 64-bit partial sum to 16 bits, carries wrapped around; it is
// 0 only for 0.
func fold(acc uint64) uint16 {
	s, c := bits.Add32(uint32(acc), uint32(acc>>32), 0)
	s += c // s ≤ 2^32-2 when c is 1
	t := s&0xffff + s>>16
	t = t&0xffff + t>>16 // the first fold is at most 0x1fffe: no third carry
	return uint16(t)
}

// kernel is the one's complement sum of b's little-endian 16-bit words as a
// 64-bit partial sum (any value that folds to the sum), b at most chunk
// bytes. It is set at init to the fastest the CPU runs (sum_amd64.go).
var kernel = sumGeneric
