package syncookie

import (
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
	c := j.Make(tuple(), 12345, 1460, made)
	for _, at := range []time.Duration{made, 127 * time.Second, 128 * time.Second, 191 * time.Second} {
		mss, ok := j.Check(tuple(), 12345, c, at)
		if !ok || mss != 1460 {
			t.Errorf("Check at %v = %d, %v; want 1460, true", at, mss, ok)
		}
	}
	if _, ok := j.Check(tuple(), 12345, c, 192*time.Second); ok {
		t.Error("cookie accepted two slots later (expired)")
	}
	if _, ok := j.Check(tuple(), 12345, c, 60*time.Second); ok {
		t.Error("cookie accepted in the slot before it was made")
	}
}

func TestForgedCookiesAreRejected(t *testing.T) {
	j := New([32]byte{2})
	now := 10 * time.Second
	c := j.Make(tuple(), 777, 1460, now)
	other := tuple()
	other.SrcPort++
	cases := map[string]func() bool{
		"other tuple":    func() bool { _, ok := j.Check(other, 777, c, now); return ok },
		"other peer ISN": func() bool { _, ok := j.Check(tuple(), 778, c, now); return ok },
		"other secret":   func() bool { _, ok := New([32]byte{3}).Check(tuple(), 777, c, now); return ok },
		"MSS bits edited": func() bool {
			_, ok := j.Check(tuple(), 777, c^(1<<hashBits), now)
			return ok
		},
		"hash bit flipped": func() bool { _, ok := j.Check(tuple(), 777, c^1, now); return ok },
	}
	for name, f := range cases {
		if f() {
			t.Errorf("%s: forged cookie accepted", name)
		}
	}
	// Random guesses: 2^-27 each, so none of 100000 should pass.
	for g := uint32(0); g < 100000; g++ {
		if _, ok := j.Check(tuple(), 777, g*40503, now); ok && g*40503 != c {
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
		ck := j.Make(tuple(), 1, c.in, 0)
		mss, ok := j.Check(tuple(), 1, ck, 0)
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
