//go:build linux

package linuxpeer_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/netramp/netramp/nic/linuxpeer"
	"github.com/netramp/netramp/nic/netns"
	"github.com/netramp/netramp/nic/wire"
)

func startPair(t *testing.T, cfg linuxpeer.Config) *linuxpeer.Pair {
	t.Helper()
	pr, err := linuxpeer.StartPair(context.Background(), cfg)
	if errors.Is(err, netns.ErrUnsupported) {
		t.Skipf("skipping: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := pr.Close(); err != nil {
			t.Errorf("pair close: %v", err)
		}
	})
	return pr
}

// TestLinuxPairCarriesKernelTCPIntact joins two kernels through the
// real-time wire, clean and lossy, and checks 16 MB each way arrives intact
// with the congestion control asked for, every frame through the wire.
func TestLinuxPairCarriesKernelTCPIntact(t *testing.T) {
	skipUnlessRoot(t)
	cases := []struct {
		name string
		path wire.Config
	}{
		{"clean", symmetric(200e6, 2*time.Millisecond, 0)},
		{"lossy", symmetric(200e6, 2*time.Millisecond, 0.005)},
		// A queue that holds all 16 MiB: nothing is dropped at all.
		{"clean-deep-queue", deep(symmetric(200e6, 2*time.Millisecond, 0), 64<<20)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pr := startPair(t, linuxpeer.Config{Wire: c.path})
			ln, err := pr.B.Listen(5001)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
			defer cancel()
			a, err := pr.A.Dial(ctx, netip.AddrPortFrom(pr.B.Addr(), 5001))
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			b, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			dl, _ := ctx.Deadline()
			exchange(t, a, b, 16<<20, dl)
			info, err := linuxpeer.TCPInfo(a)
			if err != nil {
				t.Fatal(err)
			}
			cc, err := congestionControl(a)
			if err != nil {
				t.Fatal(err)
			}
			if cc != "cubic" {
				t.Errorf("kernel socket runs %q, want cubic", cc)
			}
			ab, ba := pr.Wire().Stats()
			t.Logf("A: cwnd %d, rtt %v, retrans %d; A→B %d frames %.1f MB, lost %d, queue drops %d; B→A %d frames",
				info.Snd_cwnd, time.Duration(info.Rtt)*time.Microsecond, info.Total_retrans,
				ab.DeliveredFrames, float64(ab.DeliveredBytes)/1e6, ab.DropLoss, ab.DropQueue, ba.DeliveredFrames)
			t.Logf("lateness A→B: %v", ab.Lateness)
			if ab.DeliveredBytes < 16<<20 || ba.DeliveredBytes < 16<<20 {
				t.Errorf("the wire delivered %d and %d bytes, fewer than the 16 MiB each way the kernels exchanged", ab.DeliveredBytes, ba.DeliveredBytes)
			}
			if c.path.AtoB.Loss > 0 && ab.DropLoss == 0 {
				t.Error("lossy path dropped nothing")
			}
			// The sender's tcpi_bytes_retrans: a frame A sent that the wire
			// dropped must show as retransmitted bytes; a path that dropped
			// none of A's frames, none.
			rb, err := linuxpeer.RetransmittedBytes(a)
			if errors.Is(err, linuxpeer.ErrNoBytesRetrans) {
				t.Skipf("skipping the retransmitted bytes: %v", err)
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("A retransmitted %d bytes (%d segments)", rb, info.Total_retrans)
			dropped := ab.DropLoss + ab.DropQueue
			if c.path.AtoB.QueueBytes > 16<<20 && dropped != 0 {
				t.Errorf("the deep queue dropped %d of A's frames: the case is not clean", dropped)
			}
			switch {
			case dropped > 0 && rb == 0:
				t.Errorf("the wire dropped %d of A's frames, and A counts no retransmitted bytes", dropped)
			case dropped == 0 && rb != 0:
				t.Errorf("the wire dropped none of A's frames, and A counts %d retransmitted bytes", rb)
			}
		})
	}
}

// deep gives both directions of cfg a drop-tail queue of n bytes.
func deep(cfg wire.Config, n int) wire.Config {
	cfg.AtoB.QueueBytes, cfg.BtoA.QueueBytes = n, n
	return cfg
}

func congestionControl(c net.Conn) (string, error) {
	return linuxpeer.CongestionControlOf(c)
}

// TestLinuxRampMarks measures bytes received by 100 ms, 300 ms, 1 s and 2 s
// at 100 Mbit/s and 10 ms RTT: Linux cubic to Linux (both kernel sockets), and
// gVisor's and netramp's TCP sending to the kernel (netramp's also behind
// a 256-slot TX ring at the line rate, so it meets card stops). It reports figures and
// the wire's lateness; it asserts only that data moved and the marks are
// ordered. A run with p99 lateness over 0.5 ms is marked REJECTED in the log.
func TestLinuxRampMarks(t *testing.T) {
	skipUnlessRoot(t)
	path := symmetric(100e6, 10*time.Millisecond, 0)
	check := func(t *testing.T, r linuxpeer.RampResult, w *wire.Wire) {
		t.Helper()
		ab, ba := w.Stats()
		verdict := "accepted"
		if ab.Lateness.Late(500*time.Microsecond) || ba.Lateness.Late(500*time.Microsecond) {
			verdict = "REJECTED (emulator late)"
		}
		t.Logf("ramp %v", r)
		t.Logf("lateness data %v; acks %v; run %s", ab.Lateness, ba.Lateness, verdict)
		for i := 1; i < len(r.Received); i++ {
			if r.Received[i] < r.Received[i-1] {
				t.Errorf("mark %v has %d bytes, fewer than mark %v's %d", r.Marks[i], r.Received[i], r.Marks[i-1], r.Received[i-1])
			}
		}
		if r.Received[len(r.Received)-1] == 0 {
			t.Error("nothing received by the last mark")
		}
	}
	t.Run("linux-cubic", func(t *testing.T) {
		pr := startPair(t, linuxpeer.Config{Wire: path})
		ln, err := pr.B.Listen(5001)
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		r, err := linuxpeer.MeasureRamp(context.Background(), func(ctx context.Context) (net.Conn, error) {
			return pr.A.Dial(ctx, netip.AddrPortFrom(pr.B.Addr(), 5001))
		}, ln, nil)
		if err != nil {
			t.Fatal(err)
		}
		check(t, r, pr.Wire())
	})
	type stackArm struct {
		name   string
		gvisor bool
		ring   int
	}
	sarms := []stackArm{{"gvisor-tcp-to-linux", true, 0}, {"netramp-tcp-to-linux", false, 0}, {"netramp-tcp-ring256-to-linux", false, 256}}
	for _, arm := range sarms {
		t.Run(arm.name, func(t *testing.T) {
			cfg := path
			cfg.AtoB.TxRing = arm.ring
			p := startPeer(t, linuxpeer.Config{Wire: cfg})
			s := newStack(t, p, arm.gvisor)
			ln, err := p.Listen(5001)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			r, err := linuxpeer.MeasureRamp(context.Background(), func(ctx context.Context) (net.Conn, error) {
				return s.Dial(ctx, netip.AddrPortFrom(p.Addr(), 5001))
			}, ln, nil)
			if err != nil {
				t.Fatal(err)
			}
			check(t, r, p.Wire())
			if ab, _ := p.Wire().Stats(); arm.ring > 0 {
				t.Logf("writes refused at the full %d-slot ring: %d", arm.ring, ab.DropRing)
			}
		})
	}
}

// TestLinuxServeRunsCallerHandlerInNamespace serves an echo handler on
// kernel B and talks to it from kernel A through the emulator.
func TestLinuxServeRunsCallerHandlerInNamespace(t *testing.T) {
	skipUnlessRoot(t)
	pr := startPair(t, linuxpeer.Config{Wire: symmetric(100e6, time.Millisecond, 0)})
	addr, stop, err := pr.B.Serve(0, func(c net.Conn) { io.Copy(c, c) })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if addr.Addr() != pr.B.Addr() || addr.Port() == 0 {
		t.Fatalf("served on %v, want %v and a port", addr, pr.B.Addr())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pr.A.Dial(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	msg := []byte("echo through two kernels")
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if string(got) != string(msg) {
		t.Fatalf("echo %q, want %q", got, msg)
	}
}
