package autotune

import (
	"testing"
	"time"
)

const ms = time.Millisecond

func TestBufferGrowsToTwiceWhatTheReaderDrainsPerRTT(t *testing.T) {
	tu := New(64<<10, 16<<20)
	tu.OnRead(0, 0, 10*ms)
	// The reader drains 200 KB in one 10 ms round.
	for i := 1; i <= 10; i++ {
		tu.OnRead(time.Duration(i)*ms-ms/2, 20<<10, 10*ms)
	}
	buf, changed := tu.OnRead(10*ms, 0, 10*ms)
	if !changed || buf != 400<<10 {
		t.Fatalf("buffer %d (changed %v), want 2·200KB", buf, changed)
	}
}

func TestGrowthTracksASenderDoublingPerRound(t *testing.T) {
	tu := New(64<<10, 64<<20)
	tu.OnRead(0, 0, 10*ms)
	drain := 100 << 10
	now := time.Duration(0)
	for round := 0; round < 6; round++ {
		now += 10 * ms
		buf, _ := tu.OnRead(now, drain, 10*ms)
		// The next round the sender sends 2·drain: the buffer must hold it.
		if buf < 2*drain {
			t.Fatalf("round %d: buffer %d below the next round's %d", round, buf, 2*drain)
		}
		// This window goes out on the next round's ACKs, which clock the
		// round after it: 4·drain in flight.
		if round > 0 && buf < 4*drain {
			t.Fatalf("round %d: buffer %d does not anticipate two doublings (%d)", round, buf, 4*drain)
		}
		drain *= 2
	}
}

func TestBufferNeverShrinksAndStopsAtMax(t *testing.T) {
	tu := New(1<<20, 4<<20)
	tu.OnRead(0, 0, 10*ms)
	buf, _ := tu.OnRead(10*ms, 3<<20, 10*ms)
	if buf != 4<<20 {
		t.Fatalf("buffer %d, want capped at 4MB", buf)
	}
	// The reader slows to a trickle: the buffer stays.
	for i := 2; i < 20; i++ {
		if buf, changed := tu.OnRead(time.Duration(i)*10*ms, 100, 10*ms); buf != 4<<20 || changed {
			t.Fatalf("buffer shrank to %d", buf)
		}
	}
	small := New(1<<20, 1<<30)
	small.OnRead(0, 0, 10*ms)
	if buf, changed := small.OnRead(10*ms, 1000, 10*ms); buf != 1<<20 || changed {
		t.Fatalf("small drain changed the buffer to %d", buf)
	}
}

func TestNoEstimateMeansNoChange(t *testing.T) {
	tu := New(1000, 1<<20)
	for i := 0; i < 100; i++ {
		if buf, changed := tu.OnRead(time.Duration(i)*ms, 1<<20, 0); changed || buf != 1000 {
			t.Fatal("grew without an RTT estimate")
		}
	}
}

func TestMeasurementWaitsAFullRound(t *testing.T) {
	tu := New(1000, 1<<20)
	tu.OnRead(0, 0, 10*ms)
	if _, changed := tu.OnRead(9*ms, 50000, 10*ms); changed {
		t.Fatal("grew before a round had passed")
	}
	if buf, changed := tu.OnRead(10*ms, 0, 10*ms); !changed || buf != 100000 {
		t.Fatalf("buffer %d after a full round", buf)
	}
}

func TestBadArgumentsAreClamped(t *testing.T) {
	tu := New(-5, -10)
	if tu.Buf() != 0 || tu.Max() != 0 {
		t.Fatalf("buf %d max %d", tu.Buf(), tu.Max())
	}
	tu.OnRead(0, -100, 10*ms)
	if buf, _ := tu.OnRead(20*ms, -100, 10*ms); buf != 0 {
		t.Fatal("negative reads grew the buffer")
	}
}

func TestDoneOnceTheBufferReachesTheCap(t *testing.T) {
	tu := New(64<<10, 1<<20)
	if tu.Done() {
		t.Fatal("done below the cap")
	}
	tu.OnRead(0, 0, 10*ms)
	tu.OnRead(10*ms, 300<<10, 10*ms)
	if tu.Done() {
		t.Fatalf("done at %d of %d", tu.Buf(), tu.Max())
	}
	tu.OnRead(20*ms, 600<<10, 10*ms)
	if !tu.Done() || tu.Buf() != 1<<20 {
		t.Fatalf("buffer %d, done %v: want the cap and done", tu.Buf(), tu.Done())
	}
	if !New(1<<20, 1<<20).Done() {
		t.Fatal("a buffer that starts at its cap is not done")
	}
}
