package osbench

import "time"

// Clock is the receiver's time source: the wall clock on a real path, the
// virtual clock in a virtual-time run, so one meter measures both.
type Clock interface {
	Now() time.Time
}

// SystemClock reads time.Now.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// DefaultMarks are the instants osbench-lan/3 reports: 100 ms, 300 ms, 1 s
// and 2 s.
var DefaultMarks = []time.Duration{100 * time.Millisecond, 300 * time.Millisecond, time.Second, 2 * time.Second}

// SeriesStep is the spacing of a report's received-bytes series.
const SeriesStep = 10 * time.Millisecond

// MaxSeries bounds a report's series (10 s at SeriesStep).
const MaxSeries = 1000

// Meter records when payload bytes arrive at the receiver. A mark at t holds
// every byte of every read completed at or before origin+t: what the
// receiver could have counted then. It is pure (time is an argument), so an
// event-driven receiver in virtual time and a blocking reader in real time
// feed it the same way.
type Meter struct {
	accept     time.Time
	first      time.Time
	last       time.Time
	started    bool
	bytes      int64
	marks      []time.Duration
	fromFirst  []int64
	fromAccept []int64
	fixedF     int // marks [0, fixedF) from first are fixed
	fixedA     int
	series     []int64
}

// NewMeter starts a meter at accept, the instant the connection was accepted
// (or dialled, for a receiving dialler).
func NewMeter(accept time.Time) *Meter {
	m := &Meter{accept: accept, marks: DefaultMarks}
	m.fromFirst = make([]int64, len(m.marks))
	m.fromAccept = make([]int64, len(m.marks))
	return m
}

// Bytes returns the payload bytes counted so far.
func (m *Meter) Bytes() int64 { return m.bytes }

// Add records n payload bytes read at now. Calls must come in time order; a
// time before the previous one is taken as the previous one.
func (m *Meter) Add(now time.Time, n int) {
	if n <= 0 {
		return
	}
	if m.started && now.Before(m.last) {
		now = m.last
	}
	if now.Before(m.accept) {
		now = m.accept
	}
	m.fix(now, false)
	if !m.started {
		m.started = true
		m.first = now
	}
	m.bytes += int64(n)
	m.last = now
}

// fix closes every mark and series slot whose instant lies strictly before
// now (or at or before now, when final), at the bytes counted so far.
func (m *Meter) fix(now time.Time, final bool) {
	due := func(t time.Time) bool {
		if final {
			return !t.After(now)
		}
		// control:metal-mark-excludes-read-at-instant
		return t.Before(now)
	}
	for m.fixedA < len(m.marks) && due(m.accept.Add(m.marks[m.fixedA])) {
		m.fromAccept[m.fixedA] = m.bytes
		m.fixedA++
	}
	if !m.started {
		return
	}
	for m.fixedF < len(m.marks) && due(m.first.Add(m.marks[m.fixedF])) {
		m.fromFirst[m.fixedF] = m.bytes
		m.fixedF++
	}
	for len(m.series) < MaxSeries && due(m.first.Add(time.Duration(len(m.series))*SeriesStep)) {
		m.series = append(m.series, m.bytes)
	}
}

// Report closes the meter at end, when the stream is complete: a mark not
// yet reached holds every byte, since nothing more can arrive.
func (m *Meter) Report(end time.Time, dir Direction, expected int64) Report {
	if end.Before(m.last) {
		end = m.last
	}
	m.fix(end, true)
	for i := m.fixedA; i < len(m.marks); i++ {
		m.fromAccept[i] = m.bytes
	}
	for i := m.fixedF; i < len(m.marks); i++ {
		m.fromFirst[i] = m.bytes
	}
	r := Report{
		Version:       Version,
		Direction:     dir,
		BytesExpected: expected,
		Bytes:         m.bytes,
		SeriesStep:    SeriesStep,
		Series:        append([]int64(nil), m.series...),
	}
	if r.Series == nil {
		r.Series = []int64{}
	}
	if m.started {
		r.FirstByte = m.first.Sub(m.accept)
		r.Duration = m.last.Sub(m.first)
		if r.Duration > 0 {
			r.GoodputMBps = float64(m.bytes) / r.Duration.Seconds() / 1e6
		}
	}
	for i, d := range m.marks {
		r.Marks = append(r.Marks, Mark{After: d, FromFirst: m.fromFirst[i], FromAccept: m.fromAccept[i]})
	}
	return r
}
