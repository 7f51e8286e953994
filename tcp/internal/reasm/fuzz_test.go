package reasm

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// FuzzStore drives a small store with arbitrary (offset, length, take) steps:
// it must never panic, never exceed its bounds, and deliver the stream's
// bytes in order.
func FuzzStore(f *testing.F) {
	f.Add([]byte{0, 10, 0, 5, 0, 1, 0, 1, 0})
	f.Add(bytes.Repeat([]byte{1, 0, 1, 0, 1}, 50))
	f.Add([]byte{255, 255, 255, 255, 255, 255, 255, 255, 200})
	f.Fuzz(func(t *testing.T, in []byte) {
		s := New(512)
		s.SetMaxRanges(16)
		var nxt uint64
		var out []byte
		for len(in) >= 4 {
			off := uint64(binary.LittleEndian.Uint16(in))
			n := int(in[2])
			take := in[3]&1 == 1
			in = in[4:]
			if in != nil && len(in) >= 8 && off == 0xffff {
				off = binary.LittleEndian.Uint64(in)
				in = in[8:]
			}
			s.Insert(off, data(off, n))
			if s.Bytes() > 512+0 || s.Ranges() > 16 {
				t.Fatalf("bounds exceeded: %d bytes, %d ranges", s.Bytes(), s.Ranges())
			}
			if c := chunks(s); c > s.Bytes()/bytesPerChunk+s.Ranges() {
				t.Fatalf("%d chunks for %d bytes", c, s.Bytes())
			}
			if take {
				nxt = s.Take(nxt, func(p []byte) { out = append(out, p...) })
			}
			s.Blocks(make([]Range, 0, 4))
		}
		if !bytes.Equal(out, data(0, len(out))) || uint64(len(out)) != nxt {
			t.Fatal("delivered bytes wrong")
		}
	})
}
