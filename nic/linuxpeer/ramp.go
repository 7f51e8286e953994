package linuxpeer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// DefaultMarks are the instants, from the sender's connection being
// established, at which a ramp reports bytes received.
var DefaultMarks = []time.Duration{100 * time.Millisecond, 300 * time.Millisecond, time.Second, 2 * time.Second}

// RampResult is how many bytes the receiver had read by each mark.
type RampResult struct {
	Marks    []time.Duration
	Received []int64 // bytes read by Marks[i]
	Total    int64   // bytes read in the whole run
	Duration time.Duration
}

func (r RampResult) String() string {
	var b strings.Builder
	for i, m := range r.Marks {
		if i > 0 {
			b.WriteString(" / ")
		}
		fmt.Fprintf(&b, "%v: %.2f MB", m, float64(r.Received[i])/1e6)
	}
	fmt.Fprintf(&b, " (%.1f Mbit/s over %v)", float64(r.Total)*8/r.Duration.Seconds()/1e6, r.Duration.Round(time.Millisecond))
	return b.String()
}

// MeasureRamp dials a connection (the sender), accepts it on ln (the sink),
// writes as fast as the connection allows for the last mark plus a little,
// and returns the bytes the sink had read by each mark, counted from the
// moment dial returned. Either side may be a kernel socket or a stack's.
func MeasureRamp(ctx context.Context, dial func(context.Context) (net.Conn, error), ln net.Listener, marks []time.Duration) (RampResult, error) {
	if len(marks) == 0 {
		marks = DefaultMarks
	}
	for i := 1; i < len(marks); i++ {
		if marks[i] <= marks[i-1] {
			return RampResult{}, fmt.Errorf("%w: marks must increase: %v", ErrBadConfig, marks)
		}
	}
	dur := marks[len(marks)-1] + 50*time.Millisecond
	type point struct {
		t time.Time
		n int64
	}
	type sinkOut struct {
		pts []point
		err error
	}
	acc := make(chan sinkOut, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			acc <- sinkOut{err: fmt.Errorf("accept: %w", err)}
			return
		}
		defer c.Close()
		// The marks lie within dur; waiting longer for the sender's FIN
		// (a sender still recovering from a loss) adds nothing to them.
		readEnd := time.Now().Add(dur + 2*time.Second)
		c.SetReadDeadline(readEnd)
		pts := make([]point, 0, 1<<14)
		buf := make([]byte, 256<<10)
		var n int64
		for {
			m, err := c.Read(buf)
			if m > 0 {
				n += int64(m)
				pts = append(pts, point{time.Now(), n})
			}
			if err != nil {
				var ne net.Error
				if errors.Is(err, io.EOF) || errors.As(err, &ne) && ne.Timeout() && !time.Now().Before(readEnd) {
					err = nil
				}
				acc <- sinkOut{pts, err}
				return
			}
		}
	}()
	c, err := dial(ctx)
	if err != nil {
		ln.Close() // unblock the sink
		<-acc
		return RampResult{}, fmt.Errorf("dial: %w", err)
	}
	start := time.Now()
	end := start.Add(dur)
	c.SetWriteDeadline(end)
	buf := make([]byte, 256<<10)
	for time.Now().Before(end) && ctx.Err() == nil {
		if _, err := c.Write(buf); err != nil {
			break // the write deadline ends the run
		}
	}
	c.Close()
	so := <-acc
	if so.err != nil {
		return RampResult{}, so.err
	}
	r := RampResult{Marks: marks, Received: make([]int64, len(marks)), Duration: dur}
	for _, p := range so.pts {
		el := p.t.Sub(start)
		for i, m := range marks {
			if el <= m {
				r.Received[i] = p.n
			}
		}
		if el <= dur {
			r.Total = p.n
		}
	}
	return r, nil
}
