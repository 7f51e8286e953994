//go:build linux

package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/netramp/netramp/nic/i219/cmd/internal/xfer"
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

// checkFlap uploads xferSize bytes while the host takes the link down and up
// again through QEMU's monitor: the guest announces "SYNC linkdown" after the
// first MiB, keeps sending slowly until it sees the link drop, then sends the
// rest; the transfer must complete with a matching digest.
func checkFlap(e netEnv) (string, error) {
	if err := waitLink(e, 15*time.Second); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := e.Dial(ctx, sinkAddr)
	if err != nil {
		return "", fmt.Errorf("dial %v: %w", sinkAddr, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(xferTimeout + 30*time.Second))
	start := time.Now()
	if _, err := io.WriteString(c, xfer.Request{Op: "PUT", Size: xferSize}.String()); err != nil {
		return "", err
	}
	h := sha256.New()
	src := io.TeeReader(xfer.Pattern(3), h)
	buf := make([]byte, 64<<10)
	sent, sawDown, upAgain := int64(0), false, false
	var downAt time.Time
	for sent < xferSize {
		n := int64(len(buf))
		if xferSize-sent < n {
			n = xferSize - sent
		}
		io.ReadFull(src, buf[:n])
		if _, err := c.Write(buf[:n]); err != nil {
			return "", fmt.Errorf("write at %d bytes (link seen down: %v): %w; counters: %s", sent, sawDown, err, e.Counters())
		}
		sent += n
		if sent == 1<<20 {
			fmt.Println("SYNC linkdown")
		}
		if sent >= 1<<20 && !sawDown && !e.SeesLink() {
			// Hold the transfer open, slowly, across the host's drop.
			if time.Since(start) < 5*time.Second {
				time.Sleep(50 * time.Millisecond)
			}
		} else if sent >= 1<<20 && !sawDown {
			if !e.LinkUp() {
				sawDown, downAt = true, time.Now()
			} else if time.Since(start) > 20*time.Second {
				return "", fmt.Errorf("the link never went down; counters: %s", e.Counters())
			} else {
				// Hold the transfer open, slowly, until the host acts.
				time.Sleep(50 * time.Millisecond)
			}
		}
		if sawDown && !upAgain && e.LinkUp() {
			upAgain = true
		}
	}
	want := hex.EncodeToString(h.Sum(nil))
	line, err := readLine(c)
	if err != nil {
		return "", fmt.Errorf("reading the sink's digest: %w; counters: %s", err, e.Counters())
	}
	if got := strings.TrimSpace(line); got != fmt.Sprintf("%s %d", want, xferSize) {
		return "", fmt.Errorf("sink reports %q, sent %s", got, want)
	}
	if !sawDown && e.SeesLink() {
		return "", fmt.Errorf("the transfer ended before the link was seen down; counters: %s", e.Counters())
	}
	if !e.LinkUp() {
		return "", fmt.Errorf("link still down at the end")
	}
	el := time.Since(start)
	drop := "a link drop the driver does not report"
	if sawDown {
		drop = fmt.Sprintf("a link drop seen at %.2fs", downAt.Sub(start).Seconds())
	}
	return fmt.Sprintf("%d MiB in %.2fs across %s, sha256 %s ok; counters: %s",
		xferSize>>20, el.Seconds(), drop, want[:16], e.Counters()), nil
}

func readLine(r io.Reader) (string, error) {
	var b []byte
	one := make([]byte, 1)
	for len(b) < 256 {
		if _, err := r.Read(one); err != nil {
			return string(b), err
		}
		if one[0] == '\n' {
			return string(b), nil
		}
		b = append(b, one[0])
	}
	return string(b), fmt.Errorf("line too long")
}

var (
	sinkAddr    = netip.MustParseAddrPort("10.0.2.2:1")
	xferSize    = int64(16 << 20)
	xferTimeout = 120 * time.Second
)
