package reasm

import (
	"bytes"
	"errors"
	"math"
	"math/rand"
	"testing"
)

// data is the stream's byte at each offset, so any misplaced byte shows.
func data(off uint64, n int) []byte {
	p := make([]byte, n)
	for i := range p {
		x := off + uint64(i)
		p[i] = byte(x ^ x>>8 ^ x>>16)
	}
	return p
}

func takeAll(t *testing.T, s *Store, nxt uint64) (uint64, []byte) {
	t.Helper()
	var got []byte
	n := s.Take(nxt, func(p []byte) { got = append(got, p...) })
	return n, got
}

func TestFullWindowAfterOneHoleIsAllKept(t *testing.T) {
	// The loss-amplification guard: one lost segment at the window's start,
	// every other segment of a 4 MiB window arrives, and all of it is kept.
	const window, mss = 4 << 20, 1448
	s := New(window)
	var sent uint64 = mss // segment [0, mss) is lost
	for sent < window {
		n := mss
		if window-sent < uint64(n) {
			n = int(window - sent)
		}
		if stored, err := s.Insert(sent, data(sent, n)); err != nil || stored != n {
			t.Fatalf("Insert(%d) = %d, %v: out-of-order data dropped", sent, stored, err)
		}
		sent += uint64(n)
	}
	if s.Bytes() != window-mss || s.Ranges() != 1 {
		t.Fatalf("holding %d bytes in %d ranges, want %d in 1", s.Bytes(), s.Ranges(), window-mss)
	}
	// The retransmission fills the hole: everything is delivered in order.
	if _, err := s.Insert(0, data(0, mss)); err != nil {
		t.Fatal(err)
	}
	nxt, got := takeAll(t, s, 0)
	if nxt != window || !bytes.Equal(got, data(0, window)) {
		t.Fatalf("delivered to %d, %d bytes; want all %d in order", nxt, len(got), window)
	}
	if !s.Empty() || s.Bytes() != 0 {
		t.Fatal("store not empty after delivery")
	}
}

func TestEveryOtherSegmentLostInAFullWindowIsKept(t *testing.T) {
	const window, mss = 1 << 20, 1000
	s := New(window)
	for off := uint64(mss); off+mss <= window; off += 2 * mss {
		if _, err := s.Insert(off, data(off, mss)); err != nil {
			t.Fatalf("Insert(%d): %v (ranges %d)", off, err, s.Ranges())
		}
	}
	if s.Ranges() != window/mss/2 {
		t.Fatalf("ranges = %d", s.Ranges())
	}
}

func TestOverlapsAreTrimmedAndOnlyNewBytesCount(t *testing.T) {
	cases := []struct {
		name   string
		have   []Range
		insert Range
		stored int
		held   []Range
	}{
		{"duplicate", []Range{{10, 20}}, Range{10, 20}, 0, []Range{{10, 20}}},
		{"inside", []Range{{10, 20}}, Range{12, 15}, 0, []Range{{10, 20}}},
		{"covering", []Range{{10, 20}}, Range{5, 25}, 10, []Range{{5, 25}}},
		{"left overlap", []Range{{10, 20}}, Range{5, 12}, 5, []Range{{5, 20}}},
		{"right overlap", []Range{{10, 20}}, Range{18, 30}, 10, []Range{{10, 30}}},
		{"adjacent left", []Range{{10, 20}}, Range{5, 10}, 5, []Range{{5, 20}}},
		{"adjacent right", []Range{{10, 20}}, Range{20, 25}, 5, []Range{{10, 25}}},
		{"bridge", []Range{{10, 20}, {30, 40}}, Range{20, 30}, 10, []Range{{10, 40}}},
		{"bridge overlapping", []Range{{10, 20}, {30, 40}}, Range{15, 35}, 10, []Range{{10, 40}}},
		{"span many", []Range{{10, 12}, {14, 16}, {18, 20}}, Range{0, 30}, 24, []Range{{0, 30}}},
		{"disjoint", []Range{{10, 20}}, Range{30, 40}, 10, []Range{{10, 20}, {30, 40}}},
		{"before", []Range{{10, 20}}, Range{1, 5}, 4, []Range{{1, 5}, {10, 20}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := New(1000)
			for _, r := range c.have {
				s.Insert(r.Start, data(r.Start, int(r.Len())))
			}
			stored, err := s.Insert(c.insert.Start, data(c.insert.Start, int(c.insert.Len())))
			if err != nil || stored != c.stored {
				t.Fatalf("Insert = %d, %v; want %d", stored, err, c.stored)
			}
			held := s.Held()
			if len(held) != len(c.held) {
				t.Fatalf("held %v, want %v", held, c.held)
			}
			var total uint64
			for i := range held {
				if held[i] != c.held[i] {
					t.Fatalf("held %v, want %v", held, c.held)
				}
				total += held[i].Len()
			}
			if uint64(s.Bytes()) != total {
				t.Fatalf("Bytes = %d, ranges total %d", s.Bytes(), total)
			}
			_, got := takeAll(t, s, c.held[0].Start)
			if !bytes.Equal(got, data(c.held[0].Start, int(c.held[0].Len()))) {
				t.Fatal("bytes differ after merge")
			}
		})
	}
}

func TestBytesBeyondTheLimitAreRefusedWithErrFull(t *testing.T) {
	s := New(100)
	stored, err := s.Insert(10, data(10, 500)) // huge segment
	if !errors.Is(err, ErrFull) || stored != 100 || s.Bytes() != 100 {
		t.Fatalf("Insert = %d, %v; bytes %d; want 100, ErrFull", stored, err, s.Bytes())
	}
	if _, err := s.Insert(1000, data(1000, 1)); !errors.Is(err, ErrFull) {
		t.Fatalf("Insert into a full store = %v", err)
	}
	// Lowering the limit keeps what is held and refuses more.
	s.SetLimit(10)
	if s.Bytes() != 100 {
		t.Fatal("SetLimit discarded data")
	}
	// Draining makes room again.
	s.Take(10, nil)
	if _, err := s.Insert(200, data(200, 10)); err != nil {
		t.Fatal(err)
	}
}

func TestOneByteFragmentFloodHitsTheRangeBound(t *testing.T) {
	const limit = 1 << 20
	s := New(limit)
	refused := 0
	for off := uint64(1); off < 2*limit; off += 2 { // every other byte: a hole between each
		if _, err := s.Insert(off, []byte{1}); err != nil {
			if !errors.Is(err, ErrFull) {
				t.Fatal(err)
			}
			refused++
		}
	}
	if s.Ranges() > DefaultMaxRanges(limit) || refused == 0 {
		t.Fatalf("ranges %d (bound %d), refused %d", s.Ranges(), DefaultMaxRanges(limit), refused)
	}
	s.SetMaxRanges(0)
	if s.maxRanges != 1 {
		t.Fatal("range bound below 1")
	}
}

func chunks(s *Store) int {
	n := 0
	for _, sp := range s.spans {
		n += sp.chunks.len()
	}
	return n
}

func TestContiguousOneByteFloodKeepsBookkeepingBounded(t *testing.T) {
	for _, dir := range []string{"ascending", "descending"} {
		t.Run(dir, func(t *testing.T) {
			const n = 200000
			s := New(n + 10)
			for i := 0; i < n; i++ {
				off := uint64(10 + i)
				if dir == "descending" {
					off = uint64(10 + n - 1 - i)
				}
				if _, err := s.Insert(off, data(off, 1)); err != nil {
					t.Fatal(err)
				}
				if c := chunks(s); c > s.Bytes()/bytesPerChunk+1 {
					t.Fatalf("%d chunks for %d bytes", c, s.Bytes())
				}
			}
			s.Insert(0, data(0, 10))
			nxt, got := takeAll(t, s, 0)
			if nxt != n+10 || !bytes.Equal(got, data(0, n+10)) {
				t.Fatal("bytes differ after flood")
			}
		})
	}
}

func TestWrappedAndZeroLengthRangesAreHarmless(t *testing.T) {
	s := New(100)
	if n, err := s.Insert(math.MaxUint64-2, data(0, 10)); !errors.Is(err, ErrRange) || n != 0 {
		t.Fatalf("wrapped Insert = %d, %v; want ErrRange", n, err)
	}
	if n, err := s.Insert(50, nil); n != 0 || err != nil {
		t.Fatalf("empty Insert = %d, %v", n, err)
	}
	if n, err := s.Insert(math.MaxUint64-10, data(0, 10)); n != 10 || err != nil {
		t.Fatalf("Insert at the top of the space = %d, %v", n, err)
	}
	if !(s.Ranges() == 1 && s.Bytes() == 10) {
		t.Fatal("bookkeeping wrong")
	}
}

func TestTakeDropsDuplicatesAndStopsAtTheNextHole(t *testing.T) {
	s := New(1000)
	s.Insert(5, data(5, 10))  // [5,15)
	s.Insert(20, data(20, 5)) // [20,25)
	s.Insert(40, data(40, 5)) // [40,45)
	nxt, got := takeAll(t, s, 22)
	if nxt != 25 || !bytes.Equal(got, data(22, 3)) {
		t.Fatalf("Take(22) = %d, %d bytes", nxt, len(got))
	}
	if s.Ranges() != 1 || s.Bytes() != 5 {
		t.Fatalf("left %v", s.Held())
	}
	// Anything below the delivered point is a duplicate now.
	if n, _ := s.Insert(10, data(10, 20)); n != 5 {
		t.Fatalf("Insert straddling RCV.NXT stored %d, want 5 (25..30)", n)
	}
	if nxt, _ := takeAll(t, s, 25); nxt != 30 {
		t.Fatalf("Take = %d, want 30", nxt)
	}
	if nxt, got := takeAll(t, s, 30); nxt != 30 || got != nil {
		t.Fatal("Take across a hole delivered data")
	}
}

func TestBlocksAreMostRecentlyChangedFirst(t *testing.T) {
	s := New(1000)
	s.Insert(100, data(100, 10)) // A
	s.Insert(200, data(200, 10)) // B
	s.Insert(300, data(300, 10)) // C
	s.Insert(400, data(400, 10)) // D
	s.Insert(110, data(110, 10)) // A grows: most recent
	got := s.Blocks(make([]Range, 0, 3))
	want := []Range{{100, 120}, {400, 410}, {300, 310}}
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("Blocks = %v, want %v", got, want)
	}
	// A duplicate does not change a range's rank.
	s.Insert(200, data(200, 10))
	if got := s.Blocks(make([]Range, 0, 1)); got[0] != (Range{100, 120}) {
		t.Fatalf("duplicate re-ranked: %v", got)
	}
	if got := s.Blocks(nil); len(got) != 0 {
		t.Fatal("Blocks with no room returned blocks")
	}
	if got := s.Blocks(make([]Range, 0, 10)); len(got) != 4 {
		t.Fatalf("Blocks = %v, want all 4", got)
	}
	if got := s.Blocks(make([]Range, 0, 12)); len(got) != 4 {
		t.Fatalf("Blocks with a large dst = %v", got)
	}
}

// TestRandomSegmentsMatchAByteModel checks Insert/Take against a map of bytes.
func TestRandomSegmentsMatchAByteModel(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for trial := 0; trial < 200; trial++ {
		const win = 3000
		s := New(win)
		var nxt uint64
		var out []byte
		for step := 0; step < 300 && nxt < 20000; step++ {
			off := nxt + uint64(r.Intn(win)) - uint64(r.Intn(200))
			if off > nxt+win {
				off = nxt
			}
			n := 1 + r.Intn(300)
			if off+uint64(n) > nxt+win {
				n = int(nxt + win - off)
			}
			if n <= 0 {
				continue
			}
			if _, err := s.Insert(off, data(off, n)); err != nil {
				t.Fatalf("trial %d: in-window Insert(%d,%d) refused: %v", trial, off, n, err)
			}
			nxt = s.Take(nxt, func(p []byte) { out = append(out, p...) })
			if !bytes.Equal(out, data(0, len(out))) || uint64(len(out)) != nxt {
				t.Fatalf("trial %d: delivered stream wrong at %d", trial, len(out))
			}
			held := s.Held()
			var tot uint64
			for i, h := range held {
				tot += h.Len()
				if h.Start <= nxt || (i > 0 && held[i-1].End >= h.Start) {
					t.Fatalf("trial %d: bad ranges %v at nxt %d", trial, held, nxt)
				}
			}
			if tot != uint64(s.Bytes()) {
				t.Fatalf("bytes %d vs ranges %d", s.Bytes(), tot)
			}
		}
	}
}
