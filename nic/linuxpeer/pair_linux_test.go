//go:build linux

package linuxpeer_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/netramp/netramp/nic/linuxpeer"
	"github.com/netramp/netramp/nic/netns"
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
// emulator, GSO frames whole and split, clean and lossy, and checks 16 MB
// each way arrives intact with the congestion control asked for.
func TestLinuxPairCarriesKernelTCPIntact(t *testing.T) {
	skipUnlessRoot(t)
	cases := []struct {
		name  string
		split bool
		path  linuxpeer.Path
	}{
		{"gso-whole", false, linuxpeer.Symmetric(1e9, 2*time.Millisecond, 0)},
		{"gso-split", true, linuxpeer.Symmetric(1e9, 2*time.Millisecond, 0)},
		{"gso-split-lossy", true, linuxpeer.Symmetric(200e6, 2*time.Millisecond, 0.005)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pr := startPair(t, linuxpeer.Config{Path: c.path, SplitGSO: c.split})
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
			st := pr.Stats()
			t.Logf("A: cwnd %d, rtt %v, retrans %d; A→B %d frames %.1f MB, lost %d, queue drops %d; B→A %d frames",
				info.Snd_cwnd, time.Duration(info.Rtt)*time.Microsecond, info.Total_retrans,
				st.Out.Frames, float64(st.Out.Bytes)/1e6, st.Out.LossDrops, st.Out.QueueDrop, st.In.Frames)
			t.Logf("lateness A→B: %v", st.Out.Lateness)
			if c.path.Out.Loss > 0 && st.Out.LossDrops == 0 {
				t.Error("lossy path dropped nothing")
			}
			if st.Out.Overflow+st.In.Overflow > 0 {
				t.Errorf("emulator delay line overflowed: %d/%d", st.Out.Overflow, st.In.Overflow)
			}
		})
	}
}

func congestionControl(c net.Conn) (string, error) {
	return linuxpeer.CongestionControlOf(c)
}

// TestLinuxRampMarks measures bytes received by 100 ms, 300 ms, 1 s and 2 s
// at 1 Gbit/s and 2 ms RTT: Linux cubic to Linux (both kernel sockets), and
// gVisor's and netramp's TCP sending to the kernel (netramp's also behind
// a 256-slot TX ring at the line rate, so it meets card stops). It reports figures and
// the emulator's lateness; it asserts only that data moved and the marks
// are ordered. A run with p99 lateness over 10% of the RTT is marked
// REJECTED in the log.
func TestLinuxRampMarks(t *testing.T) {
	skipUnlessRoot(t)
	path := linuxpeer.Symmetric(1e9, 2*time.Millisecond, 0)
	check := func(t *testing.T, r linuxpeer.RampResult, st linuxpeer.PathStats) {
		t.Helper()
		verdict := "accepted"
		if st.Out.Lateness.Late(200*time.Microsecond) || st.In.Lateness.Late(200*time.Microsecond) {
			verdict = "REJECTED (emulator late)"
		}
		t.Logf("ramp %v", r)
		t.Logf("lateness data %v; acks %v; run %s", st.Out.Lateness, st.In.Lateness, verdict)
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
		pr := startPair(t, linuxpeer.Config{Path: path, Realtime: os.Getenv("NETRAMP_RT") != ""})
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
		check(t, r, pr.Stats())
	})
	type stackArm struct {
		name   string
		gvisor bool
		ring   int
	}
	sarms := []stackArm{{"gvisor-tcp-to-linux", true, 0}, {"netramp-tcp-to-linux", false, 0}, {"netramp-tcp-ring256-to-linux", false, 256}}
	for _, arm := range sarms {
		t.Run(arm.name, func(t *testing.T) {
			p := startPeer(t, linuxpeer.Config{Path: path, TxRing: arm.ring})
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
			st := p.Stats()
			check(t, r, st)
			if arm.ring > 0 {
				t.Logf("writes refused at the full %d-slot ring: %d", arm.ring, st.RingFull)
			}
		})
	}
}

// TestLinuxServeRunsCallerHandlerInNamespace serves an echo handler on
// kernel B and talks to it from kernel A through the emulator.
func TestLinuxServeRunsCallerHandlerInNamespace(t *testing.T) {
	skipUnlessRoot(t)
	pr := startPair(t, linuxpeer.Config{Path: linuxpeer.Symmetric(100e6, time.Millisecond, 0)})
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
