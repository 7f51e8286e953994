package syncookie

import (
	"fmt"
	"testing"
	"time"
)

func tuple() Tuple {
	t := Tuple{SrcPort: 40000, DstPort: 443}
	t.SrcAddr[15], t.DstAddr[15] = 5, 6
	return t
}

func TestCookieChecksInItsSlotAndTheNext(t *testing.T) {
	j := New([32]byte{1})
	made := 100*time.Second + 5*time.Second // slot 1
	c := j.Make(tuple(), 12345, 1460, Options{WS: 7, SACK: true}, made)
	for _, at := range []time.Duration{made, 127 * time.Second, 128 * time.Second, 191 * time.Second} {
		mss, _, ok := j.Check(tuple(), 12345, c, at)
		if !ok || mss != 1460 {
			t.Errorf("Check at %v = %d, %v; want 1460, true", at, mss, ok)
		}
	}
	if _, _, ok := j.Check(tuple(), 12345, c, 192*time.Second); ok {
		t.Error("cookie accepted two slots later (expired)")
	}
	if _, _, ok := j.Check(tuple(), 12345, c, 60*time.Second); ok {
		t.Error("cookie accepted in the slot before it was made")
	}
}

func TestForgedCookiesAreRejected(t *testing.T) {
	j := New([32]byte{2})
	now := 10 * time.Second
	c := j.Make(tuple(), 777, 1460, Options{WS: 4, SACK: false}, now)
	other := tuple()
	other.SrcPort++
	check := func(j *Jar, id Tuple, isn, c uint32) bool { _, _, ok := j.Check(id, isn, c, now); return ok }
	cases := map[string]func() bool{
		"other tuple":      func() bool { return check(j, other, 777, c) },
		"other peer ISN":   func() bool { return check(j, tuple(), 778, c) },
		"other secret":     func() bool { return check(New([32]byte{3}), tuple(), 777, c) },
		"hash bit flipped": func() bool { return check(j, tuple(), 777, c^1) },
	}
	// Each carried bit edited: MSS index, SACK, window scale index.
	for bit := hashBits; bit < 31; bit++ {
		cases[fmt.Sprintf("carried bit %d edited", bit)] = func() bool { return check(j, tuple(), 777, c^1<<bit) }
	}
	for name, f := range cases {
		if f() {
			t.Errorf("%s: forged cookie accepted", name)
		}
	}
	// Random guesses: 2^-24 each, so none of 100000 should pass (the
	// chance that one does is under 1%, and the guesses are fixed).
	for g := uint32(0); g < 100000; g++ {
		if check(j, tuple(), 777, g*40503) && g*40503 != c {
			t.Fatalf("guess %#x accepted", g*40503)
		}
	}
}

func TestMSSIsEncodedAsTheLargestTableEntryNotAbove(t *testing.T) {
	j := New([32]byte{4})
	cases := []struct{ in, want uint16 }{
		{1460, 1460}, {1459, 1440}, {9000, 8960}, {536, 536}, {100, 216}, {1300, 1200}, {65535, 8960},
	}
	for _, c := range cases {
		ck := j.Make(tuple(), 1, c.in, Options{WS: -1}, 0)
		mss, _, ok := j.Check(tuple(), 1, ck, 0)
		if !ok || mss != c.want {
			t.Errorf("MSS %d -> %d (%v), want %d", c.in, mss, ok, c.want)
		}
	}
}

// TestOptionsRideInTheTimestamp: every window scale and SACK choice comes
// back from the echo, the stamp never runs ahead of the clock nor more than
// one step behind it, and echoes that are not ours carry nothing.
func TestOptionsRideInTheTimestamp(t *testing.T) {
	for _, now := range []uint32{0, 5, 63, 64, 1 << 31, 0xffffffff, 123456789} {
		for ws := -1; ws <= 14; ws++ {
			for _, sack := range []bool{false, true} {
				o := Options{WS: ws, SACK: sack}
				ts := StampTS(now, o)
				if d := now - ts; d >= 2<<optBits {
					t.Fatalf("StampTS(%d, %+v) = %d: %d behind the clock", now, o, ts, d)
				}
				got, ok := OptionsFromEcho(ts, now+1000)
				if !ok || got != o {
					t.Fatalf("echo of %+v at %d: %+v, %v", o, now, got, ok)
				}
			}
		}
	}
	ts := StampTS(1000, Options{WS: 7, SACK: true})
	for name, c := range map[string]struct{ ecr, now uint32 }{
		"no marker":   {ts &^ optMarker, 2000},
		"from future": {ts, ts - 1},
		"too old":     {ts, ts + uint32(3*Slot/time.Millisecond)},
	} {
		if o, ok := OptionsFromEcho(c.ecr, c.now); ok || o.WS != -1 || o.SACK {
			t.Errorf("%s: %+v, %v; want nothing", name, o, ok)
		}
	}
}

// TestCookieCarriesEveryTableEntry: every MSS, window scale and SACK choice
// the tables hold comes back from Check as it went into Make.
func TestCookieCarriesEveryTableEntry(t *testing.T) {
	j := New([32]byte{5})
	for _, mss := range MSSTable {
		for _, ws := range WSTable {
			for _, sack := range []bool{false, true} {
				o := Options{WS: ws, SACK: sack}
				got, gotO, ok := j.Check(tuple(), 99, j.Make(tuple(), 99, mss, o, 0), 0)
				if !ok || got != mss || gotO != o {
					t.Errorf("MSS %d, %+v -> MSS %d, %+v (%v)", mss, o, got, gotO, ok)
				}
			}
		}
	}
}

// TestWindowScaleIsEncodedAsTheLargestTableEntryNotAbove: a shift the table
// lacks rounds down, so the peer's window is under-read, never over-read.
func TestWindowScaleIsEncodedAsTheLargestTableEntryNotAbove(t *testing.T) {
	j := New([32]byte{6})
	for _, c := range []struct{ in, want int }{
		{-1, -1}, {0, 0}, {1, 0}, {3, 0}, {4, 4}, {5, 4}, {7, 7}, {10, 9}, {13, 9}, {14, 14},
	} {
		_, o, ok := j.Check(tuple(), 1, j.Make(tuple(), 1, 1460, Options{WS: c.in}, 0), 0)
		if !ok || o.WS != c.want {
			t.Errorf("window scale %d -> %d (%v), want %d", c.in, o.WS, ok, c.want)
		}
	}
}
