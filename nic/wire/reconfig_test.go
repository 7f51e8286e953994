package wire

import (
	"errors"
	"testing"
	"time"
)

// TestSetDirChangesDelayRateAndLossForLaterFrames sends a frame before and
// one after each change and checks what the later one meets: the new delay,
// the new rate's serialisation, a blackout in wire time, and total loss;
// the other direction keeps its path.
func TestSetDirChangesDelayRateAndLossForLaterFrames(t *testing.T) {
	r := newRig(t, Config{AtoB: Dir{Delay: 10 * time.Millisecond}, BtoA: Dir{Delay: 10 * time.Millisecond}})
	at := func(d time.Duration, f func()) { r.clk.AfterFunc(d, f) }
	sendA := func(id uint32) {
		if _, err := send(r.w.A(), data(id, 1000)); err != nil {
			t.Errorf("frame %d: %v", id, err)
		}
	}
	set := func(d Dir) {
		if err := r.w.SetDir(SideA, d); err != nil {
			t.Errorf("SetDir: %v", err)
		}
	}
	at(0, func() { sendA(1) })
	at(100*time.Millisecond, func() { set(Dir{Delay: 50 * time.Millisecond}); sendA(2) })
	// 8 Mbit/s: 1040 bytes of IP packet plus 38 of overhead take 1.078 ms.
	at(200*time.Millisecond, func() { set(Dir{Delay: 50 * time.Millisecond, RateBps: 8e6}); sendA(3) })
	at(300*time.Millisecond, func() {
		now := r.w.Now()
		set(Dir{Blackouts: []Window{{now, now + 50*time.Millisecond}}})
		sendA(4)
	})
	at(400*time.Millisecond, func() { sendA(5) }) // the blackout is over
	at(500*time.Millisecond, func() { set(Dir{Loss: 1}); sendA(6) })
	at(600*time.Millisecond, func() {
		if _, err := send(r.w.B(), data(7, 100)); err != nil {
			t.Errorf("B: %v", err)
		}
	})
	r.drain()
	want := map[uint32]time.Duration{
		1: 10 * time.Millisecond,
		2: 150 * time.Millisecond,
		3: 250*time.Millisecond + 1078*time.Microsecond,
		5: 400 * time.Millisecond,
	}
	got := map[uint32]time.Duration{}
	for _, f := range r.b.got {
		got[segID(f.b)] = f.at
	}
	if len(got) != len(want) {
		t.Errorf("B received frames %v, want those of %v (4 in a blackout, 6 lost)", got, want)
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("frame %d arrived at %v, want %v", id, got[id], w)
		}
	}
	if len(r.a.got) != 1 || r.a.got[0].at != 610*time.Millisecond {
		t.Errorf("BtoA: %d frames (at %v), want one at 610ms: its path never changed", len(r.a.got), r.a.got)
	}
}

// TestSetDirRefusesWhatHoldsFramesAndInvalidValues: the card's ring and the
// ACK aggregator keep accounting that a change would break, and a bad value
// is refused as New refuses it.
func TestSetDirRefusesWhatHoldsFramesAndInvalidValues(t *testing.T) {
	r := newRig(t, Config{AtoB: Dir{TxRing: 8, RateBps: 1e9}})
	for _, d := range []Dir{
		{RateBps: 1e9}, // TxRing 8 -> 0
		{TxRing: 8, RateBps: 1e9, AckAggSegments: 2}, // aggregation added
		{TxRing: 8, RateBps: 1e9, Loss: 2},           // not a probability
		{TxRing: 8, Delay: -time.Second},             // negative
		{TxRing: 8, PathMTU: 60},                     // below IPv4's minimum
	} {
		if err := r.w.SetDir(SideA, d); !errors.Is(err, ErrBadConfig) {
			t.Errorf("SetDir(%+v) = %v, want ErrBadConfig", d, err)
		}
	}
	if err := r.w.SetDir(SideA, Dir{TxRing: 8, RateBps: 1e8, Loss: 0.5}); err != nil {
		t.Errorf("SetDir with the ring kept: %v", err)
	}
}

// TestTrimKeepsTheWireWorking: after Trim the wire has let go of its
// recycled frames, and frames sent afterwards still arrive intact and on
// time.
func TestTrimKeepsTheWireWorking(t *testing.T) {
	r := newRig(t, Config{AtoB: Dir{RateBps: 1e8, Delay: time.Millisecond}})
	var frames [][]byte
	for i := range 100 {
		frames = append(frames, data(uint32(i), 1000))
	}
	r.sendEvery(t, r.w.A(), 100*time.Microsecond, frames)
	r.drain()
	r.w.Trim()
	r.w.mu.Lock()
	pooled := len(r.w.bufs) + len(r.w.freeEvs)
	r.w.mu.Unlock()
	if pooled != 0 {
		t.Fatalf("%d buffers and events still pooled after Trim", pooled)
	}
	r.clk.AfterFunc(0, func() { send(r.w.A(), data(1000, 1000)) })
	start := r.clk.Elapsed()
	r.drain()
	last := r.b.got[len(r.b.got)-1]
	if len(r.b.got) != 101 || segID(last.b) != 1000 || !checksumsValid(last.b) {
		t.Fatalf("after Trim: %d frames, the last id %d (valid %v), want 101 ending with an intact 1000", len(r.b.got), segID(last.b), checksumsValid(last.b))
	}
	if want := start + time.Millisecond + 86240*time.Nanosecond; last.at != want {
		t.Fatalf("after Trim the frame arrived at %v, want %v", last.at, want)
	}
}
