package bench

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"time"

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
//
// The row ends when the sink has served OSBENCH_CONNS connections; a command
// that exits before then fails the row.
type bootArm struct {
	name, command, sinkAddr string
}

// BootTimeout bounds a boot arm's row.
var BootTimeout = 10 * time.Minute

// QEMUCommand is the boot:qemu hook: a shell command booting the image named by
// OSBENCH_QEMU_KERNEL and OSBENCH_QEMU_INITRD with an emulated e1000e on user
// networking; the image's init is expected to run `osbench source` against
// the sink given on the kernel command line.
const QEMUCommand = `exec qemu-system-x86_64 -M q35 -m 512 -nographic -no-reboot \
 -kernel "$OSBENCH_QEMU_KERNEL" -initrd "$OSBENCH_QEMU_INITRD" \
 -append "console=ttyS0 panic=-1 osbench.sink=10.0.2.2:$OSBENCH_PORT osbench.dir=$OSBENCH_DIR osbench.bytes=$OSBENCH_BYTES osbench.conns=$OSBENCH_CONNS" \
 -netdev user,id=n0 -device e1000e,netdev=n0`

func newBootArm(name, command, sinkAddr string) *bootArm {
	if command == "qemu" {
		command = QEMUCommand
	}
	if sinkAddr == "" {
		sinkAddr = "0.0.0.0:0"
	}
	return &bootArm{name: name, command: command, sinkAddr: sinkAddr}
}

func (a *bootArm) Unavailable() string {
	if a.command == QEMUCommand {
		if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
			return "qemu-system-x86_64 is not installed"
		}
		for _, v := range []string{"OSBENCH_QEMU_KERNEL", "OSBENCH_QEMU_INITRD"} {
			if os.Getenv(v) == "" {
				return v + " is not set (no device image to boot)"
			}
		}
	}
	return ""
}

func (a *bootArm) Timebase() string              { return Real }
func (a *bootArm) PathName(preset string) string { return "the device's own link (boot)" }
func (a *bootArm) Describe() map[string]string {
	return map[string]string{"command": a.command, "sink": a.sinkAddr}
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
	var out bytes.Buffer
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
				return conns, fmt.Errorf("bench: boot connection %d: %w", i, err)
			}
			conns = append(conns, report.Conn{Report: r, Wall: time.Since(start)})
		case err := <-exited:
			return conns, fmt.Errorf("bench: boot command exited (%v) after %d of %d connections: %s", err, i, spec.Conns, lastLine(out.String()))
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			return conns, fmt.Errorf("bench: boot row: %w after %d of %d connections", ctx.Err(), i, spec.Conns)
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
