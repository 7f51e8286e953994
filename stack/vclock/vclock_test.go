package vclock

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestTimersFireByDeadlineThenInsertionOrder(t *testing.T) {
	c := New(epoch)
	var got []string
	add := func(d time.Duration, name string) {
		c.AfterFunc(d, func() { got = append(got, fmt.Sprintf("%s@%v", name, c.Elapsed())) })
	}
	add(3*time.Millisecond, "c1")
	add(1*time.Millisecond, "a1")
	add(3*time.Millisecond, "c2")
	add(2*time.Millisecond, "b1")
	add(1*time.Millisecond, "a2")
	add(3*time.Millisecond, "c3")
	for c.Step() {
	}
	want := []string{"a1@1ms", "a2@1ms", "b1@2ms", "c1@3ms", "c2@3ms", "c3@3ms"}
	if !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}

func TestNowAndMonotonicAdvanceTogether(t *testing.T) {
	c := New(epoch)
	m0 := c.NowMonotonic()
	if m0 == (tcpip.MonotonicTime{}) {
		t.Fatal("NowMonotonic at start is the zero value")
	}
	c.AfterFunc(1500*time.Microsecond, func() {})
	c.Step()
	if got := c.Now().Sub(epoch); got != 1500*time.Microsecond {
		t.Fatalf("Now advanced %v, want 1.5ms", got)
	}
	if got := c.NowMonotonic().Sub(m0); got != 1500*time.Microsecond {
		t.Fatalf("NowMonotonic advanced %v, want 1.5ms", got)
	}
	if c.Elapsed() != 1500*time.Microsecond {
		t.Fatalf("Elapsed %v", c.Elapsed())
	}
}

func TestStopReportsWhetherTheTimerWasPending(t *testing.T) {
	c := New(epoch)
	fired := 0
	tm := c.AfterFunc(time.Millisecond, func() { fired++ })
	if !tm.Stop() {
		t.Fatal("Stop of a pending timer returned false")
	}
	if tm.Stop() {
		t.Fatal("second Stop returned true")
	}
	if c.Pending() != 0 || c.Step() {
		t.Fatal("stopped timer still queued")
	}
	tm2 := c.AfterFunc(time.Millisecond, func() { fired++ })
	c.Step()
	if fired != 1 {
		t.Fatalf("fired %d times, want 1", fired)
	}
	if tm2.Stop() {
		t.Fatal("Stop after firing returned true")
	}
}

func TestResetReschedulesPendingStoppedAndFiredTimers(t *testing.T) {
	c := New(epoch)
	var at []time.Duration
	tm := c.AfterFunc(5*time.Millisecond, func() { at = append(at, c.Elapsed()) })
	tm.Reset(2 * time.Millisecond) // pending: moves earlier
	c.RunFor(10 * time.Millisecond)
	tm.Reset(time.Millisecond) // fired: runs again
	c.RunFor(10 * time.Millisecond)
	tm.Stop()
	tm.Reset(3 * time.Millisecond) // stopped: runs again
	c.RunFor(10 * time.Millisecond)
	want := []time.Duration{2 * time.Millisecond, 11 * time.Millisecond, 23 * time.Millisecond}
	if !slices.Equal(at, want) {
		t.Fatalf("fired at %v, want %v", at, want)
	}
	// A reset timer goes behind others already due at the same instant.
	var order []string
	x := c.AfterFunc(time.Millisecond, func() { order = append(order, "x") })
	c.AfterFunc(time.Millisecond, func() { order = append(order, "y") })
	x.Reset(time.Millisecond)
	c.RunFor(time.Millisecond)
	if !slices.Equal(order, []string{"y", "x"}) {
		t.Fatalf("order after Reset %v, want [y x]", order)
	}
}

func TestZeroDelayTimersRunInTheDriverNotInAfterFunc(t *testing.T) {
	c := New(epoch)
	var order []string
	c.AfterFunc(0, func() { order = append(order, "z1") })
	c.AfterFunc(-time.Second, func() { order = append(order, "neg") })
	c.AfterFunc(0, func() { order = append(order, "z2") })
	if len(order) != 0 {
		t.Fatal("a zero-delay timer ran inside AfterFunc")
	}
	if c.Pending() != 3 {
		t.Fatalf("Pending %d, want 3", c.Pending())
	}
	driver := make(chan struct{})
	var ran sync.WaitGroup
	ran.Add(1)
	go func() {
		defer ran.Done()
		c.AfterFunc(0, func() { close(driver) })
	}()
	ran.Wait()
	// Only the driver goroutine runs callbacks; here that is this test.
	for c.Step() {
	}
	select {
	case <-driver:
	default:
		t.Fatal("timer scheduled from another goroutine did not run in the driver")
	}
	if !slices.Equal(order, []string{"z1", "neg", "z2"}) {
		t.Fatalf("order %v", order)
	}
	if c.Elapsed() != 0 {
		t.Fatalf("zero-delay timers moved time to %v", c.Elapsed())
	}
}

func TestTimersScheduledFromCallbacksFireInOrder(t *testing.T) {
	c := New(epoch)
	var got []string
	c.AfterFunc(time.Millisecond, func() {
		got = append(got, "outer")
		c.AfterFunc(0, func() { got = append(got, "now") })
		c.AfterFunc(time.Millisecond, func() { got = append(got, "later") })
	})
	c.AfterFunc(time.Millisecond, func() { got = append(got, "sibling") })
	c.AfterFunc(1500*time.Microsecond, func() { got = append(got, "between") })
	for c.Step() {
	}
	want := []string{"outer", "sibling", "now", "between", "later"}
	if !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	if c.Elapsed() != 2*time.Millisecond {
		t.Fatalf("ended at %v", c.Elapsed())
	}
}

func TestRunUntilStopsAtConditionOrHorizon(t *testing.T) {
	c := New(epoch)
	n := 0
	var tick func()
	tick = func() { n++; c.AfterFunc(time.Millisecond, tick) }
	c.AfterFunc(time.Millisecond, tick)
	if !c.RunUntil(func() bool { return n == 5 }, time.Second) {
		t.Fatal("RunUntil did not reach its condition")
	}
	if n != 5 || c.Elapsed() != 5*time.Millisecond {
		t.Fatalf("n=%d at %v, want 5 at 5ms", n, c.Elapsed())
	}
	if c.RunUntil(func() bool { return false }, 20*time.Millisecond+time.Microsecond) {
		t.Fatal("RunUntil returned true for a false condition")
	}
	if n != 20 || c.Elapsed() != 20*time.Millisecond+time.Microsecond {
		t.Fatalf("n=%d at %v, want 20 at horizon 20.001ms", n, c.Elapsed())
	}
	// No events: returns at once without moving time.
	c2 := New(epoch)
	if c2.RunUntil(func() bool { return false }, time.Hour) || c2.Elapsed() != 0 {
		t.Fatalf("empty clock: elapsed %v", c2.Elapsed())
	}
}

func TestRunForFiresDueTimersAndAdvancesExactly(t *testing.T) {
	c := New(epoch)
	var fired []time.Duration
	for _, d := range []time.Duration{1, 4, 5, 6} {
		c.AfterFunc(d*time.Millisecond, func() { fired = append(fired, c.Elapsed()) })
	}
	c.RunFor(5 * time.Millisecond)
	if !slices.Equal(fired, []time.Duration{time.Millisecond, 4 * time.Millisecond, 5 * time.Millisecond}) {
		t.Fatalf("fired %v", fired)
	}
	if c.Elapsed() != 5*time.Millisecond || c.Pending() != 1 {
		t.Fatalf("elapsed %v pending %d", c.Elapsed(), c.Pending())
	}
	if at, ok := c.Next(); !ok || at != 6*time.Millisecond {
		t.Fatalf("Next %v %v", at, ok)
	}
}

// randomSchedule runs a random tree of timers (with stops and resets) and
// returns the firing trace.
func randomSchedule(seed uint64) []string {
	c := New(epoch)
	r := rand.New(rand.NewPCG(seed, 1))
	var trace []string
	var timers []tcpip.Timer
	var spawn func(id, depth int) func()
	spawn = func(id, depth int) func() {
		return func() {
			trace = append(trace, fmt.Sprintf("%d@%d", id, c.Elapsed()))
			if depth >= 4 {
				return
			}
			for k := 0; k < r.IntN(4); k++ {
				d := time.Duration(r.IntN(4)) * time.Microsecond
				timers = append(timers, c.AfterFunc(d, spawn(id*10+k, depth+1)))
			}
			if len(timers) > 0 && r.IntN(3) == 0 {
				tm := timers[r.IntN(len(timers))]
				if r.IntN(2) == 0 {
					tm.Stop()
				} else {
					tm.Reset(time.Duration(r.IntN(3)) * time.Microsecond)
				}
			}
		}
	}
	for i := 0; i < 8; i++ {
		timers = append(timers, c.AfterFunc(time.Duration(r.IntN(3))*time.Microsecond, spawn(i+1, 0)))
	}
	for c.Step() {
		if len(trace) > 5000 {
			break
		}
	}
	return trace
}

func TestSameScheduleGivesSameFiringSequence(t *testing.T) {
	a, b := randomSchedule(7), randomSchedule(7)
	if len(a) < 20 {
		t.Fatalf("schedule too small to mean anything: %d events", len(a))
	}
	if !slices.Equal(a, b) {
		t.Fatal("two runs of one schedule fired differently")
	}
	if slices.Equal(a, randomSchedule(8)) {
		t.Fatal("different seeds gave identical traces: the test cannot tell runs apart")
	}
}

func TestConcurrentSchedulingIsSafe(t *testing.T) {
	c := New(epoch)
	var wg sync.WaitGroup
	var mu sync.Mutex
	count := 0
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				tm := c.AfterFunc(time.Duration(i)*time.Microsecond, func() { mu.Lock(); count++; mu.Unlock() })
				if i%2 == 0 {
					tm.Stop()
				}
			}
		}()
	}
	wg.Wait()
	for c.Step() {
	}
	if count != 400 {
		t.Fatalf("fired %d, want 400", count)
	}
}
