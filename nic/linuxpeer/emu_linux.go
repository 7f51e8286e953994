//go:build linux

package linuxpeer

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// Dir is one direction of the emulated path.
type Dir struct {
	// RateBps is the bottleneck rate in bits/s over the frame bytes
	// (Ethernet header onward); 0 means no rate limit and no queue.
	// Departure from a real Ethernet line: preamble, FCS and inter-frame
	// gap (24 bytes a frame) are not charged, so at 1500-byte frames the
	// path carries about 1.6% more than a line of the same nominal rate.
	RateBps int64
	// Delay is the one-way propagation delay added after the bottleneck.
	Delay time.Duration
	// Loss is the Bernoulli drop probability per frame. A GSO frame passed
	// whole is one frame: it loses its whole burst at once.
	Loss float64
	// QueueBytes bounds the bottleneck's drop-tail queue; 0 means four
	// bandwidth-delay products (rate × 2·Delay), at least 256 KiB.
	QueueBytes int
	// AckAggSegments and AckAggHold hold pure ACKs in this direction and
	// release them together once the other direction has delivered
	// AckAggSegments data segments since the last release, or AckAggHold
	// after the first ACK was held, whichever comes first (a receiver's
	// interrupt moderation or a Wi-Fi aggregate does this); any other frame
	// releases the held ACKs ahead of itself. Zero turns each trigger off;
	// both zero, ACKs pass at once.
	AckAggSegments int
	AckAggHold     time.Duration
}

func (d Dir) aggregates() bool { return d.AckAggSegments > 0 || d.AckAggHold > 0 }

func (d Dir) validate() error {
	if d.RateBps < 0 || d.Delay < 0 || d.QueueBytes < 0 || d.Loss < 0 || d.Loss > 1 || math.IsNaN(d.Loss) ||
		d.AckAggSegments < 0 || d.AckAggHold < 0 {
		return fmt.Errorf("%w: direction %+v: rate, delay and queue must be ≥ 0 and loss in [0,1]", ErrBadConfig, d)
	}
	if d.Delay > 10*time.Second || d.AckAggHold > 10*time.Second {
		return fmt.Errorf("%w: delay %v or ACK hold %v over 10 s", ErrBadConfig, d.Delay, d.AckAggHold)
	}
	return nil
}

func (d Dir) queueBytes() int {
	if d.QueueBytes > 0 {
		return d.QueueBytes
	}
	bdp := int(float64(d.RateBps) / 8 * (2 * d.Delay).Seconds())
	return max(4*bdp, 256<<10)
}

// Path is both directions: Out from the stack (or host A) to the kernel
// peer (host B), In the reverse. Seed fixes the loss draws.
type Path struct {
	Out, In Dir
	Seed    uint64
}

// Symmetric returns a path with the same rate, delay and loss both ways and
// rtt split evenly.
func Symmetric(rateBps int64, rtt time.Duration, loss float64) Path {
	d := Dir{RateBps: rateBps, Delay: rtt / 2, Loss: loss}
	return Path{Out: d, In: d, Seed: 1}
}

// Lateness summarises how late frames left the emulator against their
// schedule. A run whose P99 is a sizeable part of the RTT measured the
// machine's load, not the path.
type Lateness struct {
	Frames         int64
	Mean, P50, P99 time.Duration
	Max            time.Duration
	Over100us      int64 // frames released more than 100 µs late
	Over1ms        int64
}

func (l Lateness) String() string {
	return fmt.Sprintf("%d frames, lateness mean %v p50 ≤%v p99 ≤%v max %v, >100µs %d, >1ms %d",
		l.Frames, l.Mean.Round(time.Microsecond), l.P50, l.P99, l.Max.Round(time.Microsecond), l.Over100us, l.Over1ms)
}

// Late reports whether the run should be rejected: its 99th percentile
// lateness exceeds limit.
func (l Lateness) Late(limit time.Duration) bool { return l.P99 > limit }

// DirStats counts one direction of the emulator.
type DirStats struct {
	Frames, Bytes        int64 // delivered
	LossDrops, QueueDrop int64 // dropped by the loss model, by the drop-tail queue
	Overflow             int64 // dropped because the emulator's own delay line was full
	OutErrors            int64 // the far side refused the frame
	AcksHeld, Releases   int64 // pure ACKs held for aggregation, and the batches they left in
	Lateness             Lateness
}

// Lateness histogram: four buckets per octave of microseconds (quarter-
// octave resolution, within 19%), from 0 µs up to about 2^34 µs.
const nBuckets = 4 * 36

// bucketOf returns the histogram bucket of a lateness of us microseconds.
func bucketOf(us int64) int {
	if us < 4 {
		return int(max(us, 0))
	}
	e := bits.Len64(uint64(us)) - 1
	sub := int(uint64(us)>>(e-2)) & 3
	return min(4*(e-1)+sub, nBuckets-1)
}

// bucketTop returns the smallest lateness above bucket i.
func bucketTop(i int) time.Duration {
	if i < 4 {
		return time.Duration(i+1) * time.Microsecond
	}
	e, sub := i/4+1, i%4
	return time.Duration((4+sub+1)<<(e-2)) * time.Microsecond
}

type pipe struct {
	d        Dir
	qbytes   int
	skip     int
	realtime bool
	out      func([]byte) error
	mu       sync.Mutex
	rng      *rand.Rand
	nextFree time.Time
	q        chan frame
	stop     chan struct{}
	done     chan struct{}
	pool     *bufPool

	other     *pipe // the opposite direction, whose data releases held ACKs
	held      []frame
	dataSeen  int
	holdTimer *time.Timer

	frames, bytes, lossDrops, queueDrops, overflow, outErrs atomic.Int64
	acksHeld, releases                                      atomic.Int64
	latMu                                                   sync.Mutex
	hist                                                    [nBuckets]int64
	latSum, latMax                                          time.Duration
	latN, over100, over1ms                                  int64
}

type frame struct {
	b       *[]byte
	n       int
	segs    int // data segments carried, counted only when the other way aggregates ACKs
	release time.Time
}

// rawSleepMax is the longest sleep taken without telling the scheduler.
const rawSleepMax = 300 * time.Microsecond

// emulatorNice is the releasing threads' nice value.
const emulatorNice = -10

// delayLineSlots bounds the frames one direction holds in flight: enough
// for a full bottleneck queue plus a one-way delay's worth at the rate, in
// frames of 512 bytes or more, within [2^15, 2^18].
func (d Dir) delayLineSlots() int {
	inFlight := float64(d.queueBytes()) + float64(d.RateBps)/8*d.Delay.Seconds()
	return min(max(int(inFlight/512), 1<<15), 1<<18)
}

func newPipe(d Dir, seed uint64, skip int, realtime bool, pool *bufPool, out func([]byte) error) *pipe {
	p := &pipe{
		d: d, qbytes: d.queueBytes(), skip: skip, realtime: realtime, out: out, pool: pool,
		rng:  rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		q:    make(chan frame, d.delayLineSlots()),
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	go p.run()
	return p
}

// submit schedules a copy of one frame, gathered from parts, through the
// bottleneck and the delay line. It never blocks: a frame that cannot be
// held is dropped and counted. The first p.skip bytes (a virtio-net header)
// do not count towards the rate.
func (p *pipe) submit(parts ...[]byte) { p.submitAt(time.Now(), parts...) }

// submitAt is submit for a frame that reaches the bottleneck at now (after
// the sender's card stage, which may lie in the future).
func (p *pipe) submitAt(now time.Time, parts ...[]byte) {
	n := 0
	for _, b := range parts {
		n += len(b)
	}
	p.mu.Lock()
	if p.d.Loss > 0 && p.rng.Float64() < p.d.Loss {
		p.mu.Unlock()
		p.lossDrops.Add(1)
		return
	}
	buf := p.pool.get(n)
	off := 0
	for _, b := range parts {
		off += copy((*buf)[off:], b)
	}
	segs := 0
	if p.d.aggregates() || (p.other != nil && p.other.d.aggregates()) {
		var pureAck bool
		pureAck, segs = classify((*buf)[:n], p.skip)
		if pureAck && p.d.aggregates() {
			p.held = append(p.held, frame{b: buf, n: n})
			p.acksHeld.Add(1)
			if len(p.held) == 1 && p.d.AckAggHold > 0 {
				p.holdTimer = time.AfterFunc(p.d.AckAggHold, p.releaseHeld)
			}
			p.mu.Unlock()
			return
		}
		if len(p.held) > 0 {
			// Anything else releases the held ACKs ahead of itself: the
			// path reorders nothing.
			p.releaseLocked(now)
		}
	}
	p.scheduleLocked(buf, n, segs, now)
	p.mu.Unlock()
}

// scheduleLocked puts one frame through the bottleneck and into the delay
// line, or drops it.
func (p *pipe) scheduleLocked(buf *[]byte, n, segs int, now time.Time) {
	wire := n - p.skip
	depart := now
	if p.d.RateBps > 0 {
		if p.nextFree.After(now) {
			backlog := float64(p.nextFree.Sub(now)) * float64(p.d.RateBps) / 8e9
			if int(backlog)+wire > p.qbytes {
				p.queueDrops.Add(1)
				p.pool.put(buf)
				return
			}
			depart = p.nextFree
		}
		depart = depart.Add(time.Duration(float64(wire) * 8e9 / float64(p.d.RateBps)))
		p.nextFree = depart
	}
	select {
	case p.q <- frame{b: buf, n: n, segs: segs, release: depart.Add(p.d.Delay)}:
	default:
		p.overflow.Add(1)
		p.pool.put(buf)
	}
}

// sawData counts data segments carried the other way and releases the held
// ACKs once AckAggSegments have passed.
func (p *pipe) sawData(segs int) {
	p.mu.Lock()
	p.dataSeen += segs
	if p.dataSeen >= p.d.AckAggSegments && len(p.held) > 0 {
		p.releaseLocked(time.Now())
	}
	p.mu.Unlock()
}

func (p *pipe) releaseHeld() {
	p.mu.Lock()
	p.releaseLocked(time.Now())
	p.mu.Unlock()
}

func (p *pipe) releaseLocked(now time.Time) {
	if p.holdTimer != nil {
		p.holdTimer.Stop()
		p.holdTimer = nil
	}
	for _, f := range p.held {
		p.scheduleLocked(f.b, f.n, 0, now)
	}
	if len(p.held) > 0 {
		p.releases.Add(1)
	}
	clear(p.held)
	p.held = p.held[:0]
	p.dataSeen = 0
}

// classify reports whether frame (virtio-net header of skip bytes, then
// Ethernet) is a pure TCP ACK over IPv4, and how many data segments it
// carries: a GSO frame counts one per GSO size.
func classify(frame []byte, skip int) (pureAck bool, segs int) {
	l3 := skip + header.EthernetMinimumSize
	if len(frame) < l3+header.IPv4MinimumSize || header.Ethernet(frame[skip:]).Type() != header.IPv4ProtocolNumber {
		return false, 0
	}
	ip := header.IPv4(frame[l3:])
	ihl := int(ip.HeaderLength())
	if ip.Protocol() != uint8(header.TCPProtocolNumber) || ihl < header.IPv4MinimumSize || len(frame) < l3+ihl+header.TCPMinimumSize {
		return false, 0
	}
	tcp := header.TCP(frame[l3+ihl:])
	payload := int(ip.TotalLength()) - ihl - int(tcp.DataOffset())
	if payload <= 0 {
		f := tcp.Flags()
		return f&header.TCPFlagAck != 0 && f&(header.TCPFlagSyn|header.TCPFlagFin|header.TCPFlagRst) == 0, 0
	}
	if skip >= 6 {
		if gso := int(frame[4]) | int(frame[5])<<8; frame[1] != 0 && gso > 0 {
			// A GSO frame's IP total length may be 0 or stale; count from
			// the frame length.
			payload = len(frame) - l3 - ihl - int(tcp.DataOffset())
			return false, (payload + gso - 1) / gso
		}
	}
	return false, 1
}

// run releases frames at their scheduled times. It sleeps with nanosleep on
// a locked thread with 1 ns timer slack: Go's timers wake about a
// millisecond late, which would swamp a 2 ms RTT.
func (p *pipe) run() {
	defer close(p.done)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	// Best effort: on a shared machine a higher weight gets this thread
	// onto a core sooner after its sleep ends. Nice applies per thread.
	unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), emulatorNice)
	if p.realtime {
		// SCHED_FIFO 1: released frames preempt every ordinary thread. The
		// kernel's RT throttling still leaves others 5% of each second.
		unix.SchedSetAttr(0, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: 1 /* SCHED_FIFO */, Priority: 1}, 0)
	}
	for {
		var f frame
		select {
		case f = <-p.q:
		case <-p.stop:
			return
		}
		for {
			d := time.Until(f.release)
			if d <= 0 {
				break
			}
			if d > rawSleepMax {
				// A long sleep gives up the P; getting one back may wait
				// behind other goroutines, so wake early.
				ts := unix.NsecToTimespec(int64(d - rawSleepMax))
				unix.Nanosleep(&ts, nil)
				continue
			}
			// The last stretch keeps the P: no rescheduling after waking.
			ts := unix.NsecToTimespec(int64(d))
			unix.RawSyscall(unix.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0)
		}
		late := time.Since(f.release)
		if err := p.out((*f.b)[:f.n]); err != nil {
			p.outErrs.Add(1)
		} else {
			p.frames.Add(1)
			p.bytes.Add(int64(f.n - p.skip))
			if f.segs > 0 && p.other != nil && p.other.d.AckAggSegments > 0 {
				// The other way's held ACKs wait for data delivered here.
				p.other.sawData(f.segs)
			}
		}
		p.pool.put(f.b)
		p.record(late)
	}
}

func (p *pipe) record(late time.Duration) {
	i := bucketOf(late.Microseconds())
	p.latMu.Lock()
	p.hist[i]++
	p.latN++
	p.latSum += late
	p.latMax = max(p.latMax, late)
	if late > 100*time.Microsecond {
		p.over100++
	}
	if late > time.Millisecond {
		p.over1ms++
	}
	p.latMu.Unlock()
}

func (p *pipe) stats() DirStats {
	s := DirStats{
		Frames: p.frames.Load(), Bytes: p.bytes.Load(), LossDrops: p.lossDrops.Load(),
		QueueDrop: p.queueDrops.Load(), Overflow: p.overflow.Load(), OutErrors: p.outErrs.Load(),
		AcksHeld: p.acksHeld.Load(), Releases: p.releases.Load(),
	}
	p.latMu.Lock()
	defer p.latMu.Unlock()
	l := Lateness{Frames: p.latN, Max: p.latMax, Over100us: p.over100, Over1ms: p.over1ms}
	if p.latN > 0 {
		l.Mean = p.latSum / time.Duration(p.latN)
		l.P50 = p.quantile(0.50)
		l.P99 = p.quantile(0.99)
	}
	s.Lateness = l
	return s
}

// quantile returns the upper bound of the histogram bucket holding q.
func (p *pipe) quantile(q float64) time.Duration {
	want := int64(math.Ceil(q * float64(p.latN)))
	var acc int64
	for i, c := range p.hist {
		acc += c
		if acc >= want {
			return min(bucketTop(i), p.latMax.Round(time.Microsecond)+time.Microsecond)
		}
	}
	return p.latMax
}

func (p *pipe) close() {
	p.mu.Lock()
	if p.holdTimer != nil {
		p.holdTimer.Stop()
	}
	for _, f := range p.held {
		p.pool.put(f.b)
	}
	p.held = nil
	p.mu.Unlock()
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
}

// bufPool recycles frame buffers in two sizes: MTU frames and GSO frames.
type bufPool struct{ small, large sync.Pool }

const smallBuf = 2048
const largeBuf = 65536 + 256

func newBufPool() *bufPool {
	bp := &bufPool{}
	bp.small.New = func() any { b := make([]byte, smallBuf); return &b }
	bp.large.New = func() any { b := make([]byte, largeBuf); return &b }
	return bp
}

func (bp *bufPool) get(n int) *[]byte {
	if n <= smallBuf {
		return bp.small.Get().(*[]byte)
	}
	if n <= largeBuf {
		return bp.large.Get().(*[]byte)
	}
	b := make([]byte, n)
	return &b
}

func (bp *bufPool) put(b *[]byte) {
	switch cap(*b) {
	case smallBuf:
		*b = (*b)[:smallBuf]
		bp.small.Put(b)
	case largeBuf:
		*b = (*b)[:largeBuf]
		bp.large.Put(b)
	}
}
