package csum

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/checksum"
)

// reference is RFC 1071's sum written plainly: big-endian byte pairs, an odd
// last byte as a high half, each addition's carry wrapped around at once.
func reference(b []byte, initial uint16) uint16 {
	s := uint32(initial)
	for i := 0; i < len(b); i += 2 {
		w := uint32(b[i]) << 8
		if i+1 < len(b) {
			w |= uint32(b[i+1])
		}
		s += w
		if s > 0xffff {
			s -= 0xffff
		}
	}
	return uint16(s)
}

// kernelCase is one kernel the package may run, and whether this machine
// runs it.
type kernelCase struct {
	name string
	fn   func([]byte) uint64
	ok   bool
}

// eachKernel runs f with each kernel of this machine set as the package's,
// restoring the chosen one after.
func eachKernel(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	for _, k := range kernels() {
		t.Run(k.name, func(t *testing.T) {
			if !k.ok {
				t.Skipf("%s: not on this machine", k.name)
			}
			defer func(old func([]byte) uint64) { kernel = old }(kernel)
			kernel = k.fn
			f(t)
		})
	}
}

func randomBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func TestSumMatchesReferenceEveryLengthAndAlignment(t *testing.T) {
	eachKernel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(1, 2))
		buf := randomBytes(r, 64+300)
		for off := 0; off < 64; off++ {
			for n := 0; n <= 300; n++ {
				b := buf[off : off+n]
				initial := uint16(r.Uint32())
				if got, want := Sum(b, initial), reference(b, initial); got != want {
					t.Fatalf("Sum(%d bytes at offset %d, %#04x) = %#04x, want %#04x", n, off, initial, got, want)
				}
			}
		}
	})
}

func TestSumMatchesReferenceOnLongBuffers(t *testing.T) {
	eachKernel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(3, 4))
		buf := randomBytes(r, 1<<20+64)
		for _, n := range []int{1460, 4095, 4096, 8999, 9000, 65535, 65536, 65537, 1<<20 - 1, 1 << 20} {
			for _, off := range []int{0, 1, 7, 31, 32, 33} {
				b := buf[off : off+n]
				if got, want := Sum(b, 0), reference(b, 0); got != want {
					t.Errorf("Sum(%d bytes at offset %d) = %#04x, want %#04x", n, off, got, want)
				}
			}
		}
	})
}

// All-ones bytes make every addition carry: a kernel that drops one carry,
// anywhere, is off by one.
func TestSumCarriesOnAllOnes(t *testing.T) {
	eachKernel(t, func(t *testing.T) {
		ones := make([]byte, 1<<17+64)
		for i := range ones {
			ones[i] = 0xff
		}
		for n := 0; n <= 300; n++ {
			for off := 0; off < 40; off++ {
				for _, initial := range []uint16{0, 1, 0xfffe, 0xffff} {
					b := ones[off : off+n]
					if got, want := Sum(b, initial), reference(b, initial); got != want {
						t.Fatalf("Sum(%d bytes of 0xff at offset %d, %#04x) = %#04x, want %#04x", n, off, initial, got, want)
					}
				}
			}
		}
		for _, n := range []int{4096, 9000, 65535, 1 << 17} {
			b := ones[:n]
			if got, want := Sum(b, 0), reference(b, 0); got != want {
				t.Errorf("Sum(%d bytes of 0xff) = %#04x, want %#04x", n, got, want)
			}
		}
	})
}

// Zeros sum to 0, not to 0xffff; data summing to 0 modulo 0xffff gives 0xffff.
func TestSumIsZeroOnlyForZeros(t *testing.T) {
	eachKernel(t, func(t *testing.T) {
		for _, n := range []int{0, 1, 2, 33, 128, 9000} {
			if got := Sum(make([]byte, n), 0); got != 0 {
				t.Errorf("Sum(%d zeros) = %#04x, want 0", n, got)
			}
		}
		b := make([]byte, 200)
		b[0], b[1], b[150], b[151] = 0x12, 0x34, 0xed, 0xcb // 0x1234 + 0xedcb = 0xffff
		if got := Sum(b, 0); got != 0xffff {
			t.Errorf("Sum of words adding to 0xffff = %#04x, want 0xffff", got)
		}
	})
}

// A buffer longer than a chunk is summed a chunk at a time, each chunk
// folded into the rest.
func TestSumAcrossChunks(t *testing.T) {
	eachKernel(t, func(t *testing.T) {
		defer func(old int) { chunk = old }(chunk)
		r := rand.New(rand.NewPCG(5, 6))
		buf := randomBytes(r, 5000)
		ones := make([]byte, 5000)
		for i := range ones {
			ones[i] = 0xff
		}
		for _, c := range []int{2, 8, 32, 96, 128, 1024} {
			chunk = c
			for _, n := range []int{0, 1, c - 1, c, c + 1, 3*c + 1, 4999, 5000} {
				for _, b := range [][]byte{buf[:n], ones[:n]} {
					if got, want := Sum(b, 0x1234), reference(b, 0x1234); got != want {
						t.Errorf("chunk %d: Sum(%d bytes) = %#04x, want %#04x", c, n, got, want)
					}
				}
			}
		}
	})
}

func TestSumMatchesGVisor(t *testing.T) {
	eachKernel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(7, 8))
		buf := randomBytes(r, 70000)
		for i := 0; i < 2000; i++ {
			off := r.IntN(64)
			n := r.IntN(len(buf) - off)
			initial := uint16(r.Uint32())
			b := buf[off : off+n]
			if got, want := Sum(b, initial), checksum.Checksum(b, initial); got != want {
				t.Fatalf("Sum(%d bytes at offset %d, %#04x) = %#04x, gVisor's %#04x", n, off, initial, got, want)
			}
		}
	})
}

// pieces cuts b at the given offsets (sorted, within b).
func pieces(b []byte, cuts []int) [][]byte {
	var ps [][]byte
	last := 0
	for _, c := range cuts {
		ps = append(ps, b[last:c])
		last = c
	}
	return append(ps, b[last:])
}

func TestSummerSumsPiecesAsOneRun(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	buf := randomBytes(r, 20000)
	ones := make([]byte, 20000)
	for i := range ones {
		ones[i] = 0xff
	}
	cases := []struct {
		name string
		n    int
		cuts []int
	}{
		{"none", 100, nil},
		{"empty", 0, nil},
		{"even cut", 100, []int{50}},
		{"odd cut", 100, []int{51}},
		{"two odd cuts", 101, []int{1, 50}},
		{"odd, odd, even", 9000, []int{1, 1460, 2921}},
		{"empty pieces", 99, []int{0, 0, 33, 33, 33, 98, 99}},
		{"one-byte pieces", 7, []int{1, 2, 3, 4, 5, 6}},
		{"a GSO aggregate", 19000, []int{1448, 2896, 4344, 5792, 9001, 9002, 17999}},
	}
	eachKernel(t, func(t *testing.T) {
		for _, data := range []struct {
			name string
			b    []byte
		}{{"random", buf}, {"all ones", ones}} {
			for _, tc := range cases {
				whole := data.b[:tc.n]
				var s Summer
				var g checksum.Checksumer
				for _, p := range pieces(whole, tc.cuts) {
					s.Add(p)
					g.Add(p)
				}
				if got, want := s.Sum(), reference(whole, 0); got != want {
					t.Errorf("%s, %s: Summer = %#04x, want %#04x", data.name, tc.name, got, want)
				}
				if got, want := s.Sum(), g.Checksum(); got != want {
					t.Errorf("%s, %s: Summer = %#04x, gVisor's Checksumer %#04x", data.name, tc.name, got, want)
				}
			}
		}
		// Random cuts, odd and even.
		for i := 0; i < 500; i++ {
			n := r.IntN(3000)
			cuts := make([]int, r.IntN(6))
			for j := range cuts {
				cuts[j] = r.IntN(n + 1)
			}
			sortInts(cuts)
			var s Summer
			for _, p := range pieces(buf[:n], cuts) {
				s.Add(p)
			}
			if got, want := s.Sum(), reference(buf[:n], 0); got != want {
				t.Fatalf("%d bytes cut at %v: Summer = %#04x, want %#04x", n, cuts, got, want)
			}
		}
	})
}

func sortInts(a []int) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

func TestCombineWrapsTheCarry(t *testing.T) {
	for _, tc := range []struct{ a, b, want uint16 }{
		{0, 0, 0}, {1, 2, 3}, {0xffff, 0, 0xffff}, {0xffff, 1, 1}, {0xffff, 0xffff, 0xffff}, {0x8000, 0x8000, 1},
	} {
		if got := Combine(tc.a, tc.b); got != tc.want {
			t.Errorf("Combine(%#04x, %#04x) = %#04x, want %#04x", tc.a, tc.b, got, tc.want)
		}
		if got, want := Combine(tc.a, tc.b), checksum.Combine(tc.a, tc.b); got != want {
			t.Errorf("Combine(%#04x, %#04x) = %#04x, gVisor's %#04x", tc.a, tc.b, got, want)
		}
	}
}

func FuzzSum(f *testing.F) {
	f.Add([]byte{}, uint16(0), uint16(0))
	f.Add([]byte{0xff}, uint16(0xffff), uint16(1))
	f.Add(make([]byte, 200), uint16(0x1234), uint16(77))
	f.Fuzz(func(t *testing.T, b []byte, initial, cut uint16) {
		want := reference(b, initial)
		c := int(cut) % (len(b) + 1)
		defer func(old func([]byte) uint64) { kernel = old }(kernel)
		for _, k := range kernels() {
			if !k.ok {
				continue
			}
			kernel = k.fn
			if got := Sum(b, initial); got != want {
				t.Errorf("%s: Sum(%x, %#04x) = %#04x, want %#04x", k.name, b, initial, got, want)
			}
			var s Summer
			s.Add(b[:c])
			s.Add(b[c:])
			if got := Combine(initial, s.Sum()); got != want {
				t.Errorf("%s: Summer cut at %d = %#04x, want %#04x", k.name, c, got, want)
			}
		}
	})
}

var sinkSum uint16

func BenchmarkSum(b *testing.B) {
	for _, n := range []int{64, 1460, 9000, 65536} {
		buf := randomBytes(rand.New(rand.NewPCG(11, 12)), n)
		for _, k := range kernels() {
			b.Run(fmt.Sprintf("%d/%s", n, k.name), func(b *testing.B) {
				if !k.ok {
					b.Skipf("%s: not on this machine", k.name)
				}
				defer func(old func([]byte) uint64) { kernel = old }(kernel)
				kernel = k.fn
				b.SetBytes(int64(n))
				for b.Loop() {
					sinkSum = Sum(buf, 0)
				}
			})
		}
		b.Run(fmt.Sprintf("%d/gvisor", n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				sinkSum = checksum.Checksum(buf, 0)
			}
		})
	}
}
