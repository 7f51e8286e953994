//go:build linux

package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/netramp/netramp/metal/cmd/internal/xfer"
)

// checkE2E uploads and then downloads xferSize bytes through the host's sink
// and requires both SHA-256 digests to match.
func checkE2E(e netEnv) (string, error) {
	if err := waitLink(e, 15*time.Second); err != nil {
		return "", err
	}
	put, err := timed(e, func(c net.Conn) (string, error) { return xfer.Put(c, 1, xferSize) })
	if err != nil {
		return "", fmt.Errorf("PUT: %w; counters: %s", err, e.Counters())
	}
	get, err := timed(e, func(c net.Conn) (string, error) { return xfer.Get(c, 2, xferSize) })
	if err != nil {
		return "", fmt.Errorf("GET: %w; counters: %s", err, e.Counters())
	}
	return fmt.Sprintf("PUT %s; GET %s; counters: %s", put, get, e.Counters()), nil
}

// timed dials the sink, runs f, and describes the result: size, rate and
// the digest's first bytes.
func timed(e netEnv, f func(net.Conn) (string, error)) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := e.Dial(ctx, sinkAddr)
	if err != nil {
		return "", fmt.Errorf("dial %v: %w", sinkAddr, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(xferTimeout))
	start := time.Now()
	sum, err := f(c)
	el := time.Since(start)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d MiB in %.2fs (%.1f MB/s) sha256 %s ok", xferSize>>20, el.Seconds(), float64(xferSize)/el.Seconds()/1e6, sum[:16]), nil
}

// checkFlap moves xferSize bytes up and then down while the host takes the
// link down and up again through QEMU's monitor (once per direction): each
// transfer must complete with a matching digest, and a driver that reports
// link state must have seen the link fall.
func checkFlap(e netEnv) (string, error) {
	if err := waitLink(e, 15*time.Second); err != nil {
		return "", err
	}
	up, err := flapOne(e, "PUT")
	if err != nil {
		return "", fmt.Errorf("PUT: %w", err)
	}
	down, err := flapOne(e, "GET")
	if err != nil {
		return "", fmt.Errorf("GET: %w", err)
	}
	return fmt.Sprintf("PUT %s; GET %s; counters: %s", up, down, e.Counters()), nil
}

// dropWatch paces a transfer around the host's link drop: after the first
// MiB it announces "SYNC linkdown" and starts watching the driver's link
// state every 10 ms (a read blocked through the whole drop would miss it),
// then moves one chunk per 50 ms until the drop is seen (or, for a driver
// that cannot see a short drop, for 5 s), then lets the transfer run.
type dropWatch struct {
	e         netEnv
	start     time.Time
	announced time.Time
	downAt    atomic.Int64 // nanoseconds since start; 0 = not seen
	stop      chan struct{}
}

func newDropWatch(e netEnv) *dropWatch {
	return &dropWatch{e: e, start: time.Now(), stop: make(chan struct{})}
}

func (w *dropWatch) seen() bool { return w.downAt.Load() != 0 }

func (w *dropWatch) close() {
	if !w.announced.IsZero() {
		close(w.stop)
	}
}

func (w *dropWatch) step(done int64) error {
	if done < 1<<20 || w.seen() {
		return nil
	}
	if w.announced.IsZero() {
		w.announced = time.Now()
		if w.e.SeesLink() {
			go func() {
				for {
					select {
					case <-w.stop:
						return
					case <-time.After(10 * time.Millisecond):
					}
					if !w.e.LinkUp() {
						w.downAt.Store(int64(time.Since(w.start)))
						return
					}
				}
			}()
		}
		fmt.Println("SYNC linkdown")
	}
	if !w.e.SeesLink() {
		if time.Since(w.announced) < 5*time.Second {
			time.Sleep(50 * time.Millisecond)
		}
		return nil
	}
	if time.Since(w.announced) > 20*time.Second {
		return fmt.Errorf("the link was not seen down within 20s of asking")
	}
	time.Sleep(50 * time.Millisecond)
	return nil
}

// flapOne runs one transfer ("PUT" or "GET") of xferSize bytes under a
// dropWatch and checks its digest.
func flapOne(e netEnv, op string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := e.Dial(ctx, sinkAddr)
	if err != nil {
		return "", fmt.Errorf("dial %v: %w", sinkAddr, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(xferTimeout + 30*time.Second))
	start := time.Now()
	w := newDropWatch(e)
	defer w.close()
	const seed = 3
	if _, err := io.WriteString(c, xfer.Request{Op: op, Size: xferSize, Seed: seed}.String()); err != nil {
		return "", err
	}
	h := sha256.New()
	buf := make([]byte, 64<<10)
	pattern := xfer.Pattern(seed)
	br := bufio.NewReader(c)
	for done := int64(0); done < xferSize; {
		n := min(int64(len(buf)), xferSize-done)
		if op == "PUT" {
			io.ReadFull(pattern, buf[:n])
			if _, err := c.Write(buf[:n]); err != nil {
				return "", fmt.Errorf("write at %d bytes: %w; counters: %s", done, err, e.Counters())
			}
		} else if _, err := io.ReadFull(br, buf[:n]); err != nil {
			return "", fmt.Errorf("read at %d bytes: %w; counters: %s", done, err, e.Counters())
		}
		h.Write(buf[:n])
		done += n
		if err := w.step(done); err != nil {
			return "", fmt.Errorf("%w; counters: %s", err, e.Counters())
		}
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if err := xfer.CheckTrailer(br, sum, xferSize); err != nil {
		return "", fmt.Errorf("%w; counters: %s", err, e.Counters())
	}
	if e.SeesLink() && !w.seen() {
		return "", fmt.Errorf("the transfer ended before the link was seen down; counters: %s", e.Counters())
	}
	if !e.LinkUp() {
		return "", fmt.Errorf("link still down at the end")
	}
	drop := "a link drop the driver does not report"
	if w.seen() {
		drop = fmt.Sprintf("a link drop seen at %.2fs", time.Duration(w.downAt.Load()).Seconds())
	}
	return fmt.Sprintf("%d MiB in %.2fs across %s, sha256 %s ok", xferSize>>20, time.Since(start).Seconds(), drop, sum[:16]), nil
}

var (
	sinkAddr    = netip.MustParseAddrPort("10.0.2.2:1")
	xferSize    = int64(16 << 20)
	xferTimeout = 120 * time.Second
)
