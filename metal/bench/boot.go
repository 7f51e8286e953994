package bench

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/netramp/netramp/metal/arms"
	"github.com/netramp/netramp/metal/osbench"
	"github.com/netramp/netramp/metal/report"
)

// bootArm is a device under test that runs the source: the runner listens
// with a kernel-TCP sink, then runs a command that boots an image (on metal,
// or under QEMU) whose source dials the sink for the row's connections. The
// command gets, in its environment:
//
//	OSBENCH_SINK   host:port of the sink (for QEMU user networking, the guest dials 10.0.2.2:port)
//	OSBENCH_PORT   the port alone
//	OSBENCH_DIR    upload or download
//	OSBENCH_BYTES  payload bytes per connection
//	OSBENCH_CONNS  connections to make
//	OSBENCH_ARM    the arm the image's TCP runs (boot:qemu[:arm] only)
//
// The row ends when the sink has served OSBENCH_CONNS connections; a command
// that exits before then fails the row.
type bootArm struct {
	name, command, sinkAddr string
	qemu                    bool   // the boot:qemu hook
	arm                     string // the guest's arm, for the hook
}

// BootTimeout bounds a boot arm's row.
var BootTimeout = 10 * time.Minute

// QEMUCommand is the boot:qemu hook: a shell command booting the image named by
// OSBENCH_QEMU_KERNEL and OSBENCH_QEMU_INITRD (ci/qemu/osbench-image.sh builds
// one) under TCG with an emulated e1000e on user networking, where 10.0.2.2 is
// the host's loopback. The image's init runs the source on the kernel
// arguments osbench.sink, .dir, .bytes, .conns and .arm, then powers off. The
// console is the command's output and, if OSBENCH_QEMU_CONSOLE names a file,
// is kept there too; OSBENCH_QEMU_ACCEL (default tcg) picks the accelerator.
const QEMUCommand = `exec qemu-system-x86_64 -accel "${OSBENCH_QEMU_ACCEL:-tcg}" -M q35 -m 512 -smp 1 \
 -display none -monitor none -no-reboot \
 -chardev "stdio,id=con,signal=off,logfile=${OSBENCH_QEMU_CONSOLE:-/dev/null}" -serial chardev:con \
 -kernel "$OSBENCH_QEMU_KERNEL" -initrd "$OSBENCH_QEMU_INITRD" \
 -append "console=ttyS0 panic=-1 quiet loglevel=4 no_timer_check osbench.sink=10.0.2.2:$OSBENCH_PORT osbench.dir=$OSBENCH_DIR osbench.bytes=$OSBENCH_BYTES osbench.conns=$OSBENCH_CONNS osbench.arm=$OSBENCH_ARM" \
 -netdev user,id=n0 -device e1000e,netdev=n0,romfile=`

// qemuArm reports whether the QEMU image's source can run arm
// (boot:qemu:<arm>): one of the table's, or gVisor's TCP.
func qemuArm(arm string) bool { return arms.Is(arm) || arm == "gvisor" }

// newBootArm builds boot:<command>; the command "qemu" or "qemu:<arm>" is
// the QEMU hook running that arm (the stack's default, arms.Default, when
// not named). The hook's sink listens
// on the loopback only, which is where QEMU's user networking connects.
func newBootArm(name, command, sinkAddr string) (*bootArm, error) {
	a := &bootArm{name: name, command: command, sinkAddr: sinkAddr}
	if command == "qemu" || strings.HasPrefix(command, "qemu:") {
		a.qemu, a.command, a.arm = true, QEMUCommand, arms.Default()
		if arm, ok := strings.CutPrefix(command, "qemu:"); ok {
			if !qemuArm(arm) {
				return nil, fmt.Errorf("%w: %s=boot:%s: the QEMU image runs arm A, B, P, D or gvisor", ErrUnknownArm, name, command)
			}
			a.arm = arm
		}
		if a.sinkAddr == "" {
			a.sinkAddr = "127.0.0.1:0"
		}
	}
	if a.sinkAddr == "" {
		a.sinkAddr = "0.0.0.0:0"
	}
	return a, nil
}

func (a *bootArm) Unavailable() string {
	if a.qemu {
		if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
			return "qemu-system-x86_64 is not installed"
		}
		for _, v := range []string{"OSBENCH_QEMU_KERNEL", "OSBENCH_QEMU_INITRD"} {
			f := os.Getenv(v)
			if f == "" {
				return v + " is not set (no device image to boot; ci/qemu/osbench-image.sh builds one)"
			}
			if _, err := os.Stat(f); err != nil {
				return v + ": " + err.Error()
			}
		}
	}
	return ""
}

func (a *bootArm) Timebase() string              { return Real }
func (a *bootArm) PathName(preset string) string { return "the device's own link (boot)" }
func (a *bootArm) Describe() map[string]string {
	d := map[string]string{"command": a.command, "sink": a.sinkAddr}
	if a.qemu {
		d["arm"] = a.arm
		d["kernel"], d["initrd"] = os.Getenv("OSBENCH_QEMU_KERNEL"), os.Getenv("OSBENCH_QEMU_INITRD")
	}
	return d
}

func (a *bootArm) RunRow(ctx context.Context, spec RowSpec) ([]report.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, BootTimeout)
	defer cancel()
	ln, err := net.Listen("tcp", a.sinkAddr)
	if err != nil {
		return nil, fmt.Errorf("bench: boot sink: %w", err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	cmd := exec.CommandContext(ctx, "sh", "-c", a.command)
	cmd.Env = append(os.Environ(), "OSBENCH_SINK="+ln.Addr().String(), "OSBENCH_PORT="+port,
		"OSBENCH_DIR="+string(spec.Dir), "OSBENCH_BYTES="+strconv.FormatInt(spec.Bytes, 10),
		"OSBENCH_CONNS="+strconv.Itoa(spec.Conns))
	if a.qemu {
		cmd.Env = append(cmd.Env, "OSBENCH_ARM="+a.arm)
	}
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: boot command: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	type acc struct {
		c   net.Conn
		at  time.Time
		err error
	}
	var conns []report.Conn
	for i := 0; i < spec.Conns; i++ {
		if spec.Progress != nil {
			spec.Progress(i)
		}
		got := make(chan acc, 1)
		go func() { c, err := ln.Accept(); got <- acc{c, time.Now(), err} }()
		select {
		case g := <-got:
			if g.err != nil {
				return conns, g.err
			}
			start := time.Now()
			r, err := (&osbench.Sink{}).Serve(g.c, g.at)
			if err != nil {
				return conns, fmt.Errorf("bench: boot connection %d: %w; the command's output ends: %s", i, err, out.tail(6))
			}
			conns = append(conns, report.Conn{Report: r, Wall: time.Since(start)})
		case err := <-exited:
			return conns, fmt.Errorf("bench: boot command exited (%v) after %d of %d connections; its output ends: %s", err, i, spec.Conns, out.tail(6))
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			return conns, fmt.Errorf("bench: boot row: %w after %d of %d connections; the command's output ends: %s", ctx.Err(), i, spec.Conns, out.tail(6))
		}
	}
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
	return conns, nil
}

// lockedBuffer collects a command's output while the row reads its tail.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// tail is the last n non-empty lines, joined by " | " for one error line.
func (l *lockedBuffer) tail(n int) string {
	l.mu.Lock()
	s := l.b.String()
	l.mu.Unlock()
	var lines []string
	for _, x := range strings.Split(strings.ReplaceAll(s, "\r", ""), "\n") {
		if x = strings.TrimSpace(x); x != "" {
			lines = append(lines, x)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	if len(lines) == 0 {
		return "(nothing)"
	}
	return strings.Join(lines, " | ")
}
