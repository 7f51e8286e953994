package bench

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/netramp/netramp/metal/osbench"
	"github.com/netramp/netramp/metal/report"
)

// loopbackArm runs osbench-lan/3 between two kernel sockets on 127.0.0.1:
// no path emulation, so it checks the bench itself (protocol, runner,
// evidence), not a TCP's ramp on a path.
type loopbackArm struct{}

func (*loopbackArm) Unavailable() string           { return "" }
func (*loopbackArm) Timebase() string              { return Real }
func (*loopbackArm) PathName(preset string) string { return "kernel loopback (no emulation)" }
func (*loopbackArm) Describe() map[string]string {
	return map[string]string{"tcp": "host kernel", "address": "127.0.0.1"}
}

func (*loopbackArm) RunRow(ctx context.Context, spec RowSpec) ([]report.Conn, error) {
	return runRealRow(ctx, spec, func() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") },
		func(ctx context.Context, addr string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", addr)
		}, nil)
}

// runRealRow runs spec.Conns connections one after another: a sink on the
// listener, a source on each dialled connection, both on the wall clock.
// counters, if set, is read before and after each connection.
func runRealRow(ctx context.Context, spec RowSpec, listen func() (net.Listener, error),
	dial func(context.Context, string) (net.Conn, error), counters func() map[string]uint64) ([]report.Conn, error) {
	ln, err := listen()
	if err != nil {
		return nil, fmt.Errorf("bench: listen: %w", err)
	}
	defer ln.Close()
	var out []report.Conn
	for i := 0; i < spec.Conns; i++ {
		if spec.Progress != nil {
			spec.Progress(i)
		}
		if err := ctx.Err(); err != nil {
			return out, err
		}
		var before map[string]uint64
		if counters != nil {
			before = counters()
		}
		start := time.Now()
		type res struct {
			r   osbench.Report
			err error
		}
		sunk := make(chan res, 1)
		go func() {
			c, err := ln.Accept()
			if err != nil {
				sunk <- res{err: err}
				return
			}
			r, err := (&osbench.Sink{}).Serve(c, time.Now())
			sunk <- res{r, err}
		}()
		c, err := dial(ctx, ln.Addr().String())
		if err != nil {
			ln.Close()
			return out, fmt.Errorf("bench: dial: %w", err)
		}
		srcRep, srcErr := (&osbench.Source{}).Run(c, spec.Dir, spec.Bytes)
		var s res
		select {
		case s = <-sunk:
		case <-ctx.Done():
			return out, ctx.Err()
		}
		if s.err != nil || srcErr != nil {
			return out, fmt.Errorf("bench: connection %d: sink: %v; source: %v", i, s.err, srcErr)
		}
		rep := s.r
		if spec.Dir == osbench.Download {
			rep = srcRep
		}
		conn := report.Conn{Report: rep, Wall: time.Since(start)}
		if counters != nil {
			conn.Counters = diff(counters(), before)
		}
		out = append(out, conn)
	}
	return out, nil
}

func diff(after, before map[string]uint64) map[string]uint64 {
	d := make(map[string]uint64, len(after))
	for k, v := range after {
		if b := before[k]; v >= b {
			d[k] = v - b
		}
	}
	return d
}
