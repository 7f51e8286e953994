package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/netramp/netramp/metal/arms"
	"github.com/netramp/netramp/metal/osbench"
	"github.com/netramp/netramp/metal/report"
	"github.com/netramp/netramp/nic/wire"
)

// benchArms are the arms the whole-bench test runs: this TCP's two arms in
// virtual time, named X and Y here.
var benchArms = Definitions{"X": "A", "Y": "B"}

const benchRules = "faster: Y > X on goodput in every pair\nramp: Y > X on recv_100ms in every pair, p <= 0.5\n"

func TestWholeBenchTableMatchesTheRawRecords(t *testing.T) {
	ev := t.TempDir()
	var out bytes.Buffer
	res, err := Run(context.Background(), Config{
		Order: []string{"X", "Y", "X", "Y"}, Defs: benchArms, Preset: "t14", Dir: osbench.Upload,
		Bytes: 3_000_000, Conns: 2, Seed: 1, Rules: benchRules, RulesName: "test.rules", Evidence: ev, Out: &out,
	})
	if err != nil {
		t.Fatal(err)
	}
	printed := out.String()
	// The rule was copied into the evidence as written.
	if b, err := os.ReadFile(filepath.Join(ev, "rules.txt")); err != nil || string(b) != benchRules {
		t.Fatalf("rules.txt: %q, %v", b, err)
	}
	for _, f := range []string{"table.txt", "table.md", "verdict.txt", "host.txt", "arms.json", "plan.json", "ramp.png", "ramp.svg"} {
		if st, err := os.Stat(filepath.Join(ev, f)); err != nil || st.Size() == 0 {
			t.Errorf("evidence %s: %v", f, err)
		}
	}
	if len(res.Verdicts) != 2 || !strings.Contains(printed, "faster: ") {
		t.Errorf("verdicts %v", res.Verdicts)
	}

	// The raw records, read back and reduced here independently of report.
	type key struct {
		arm string
		row int
	}
	byRow := map[key][]osbench.Report{}
	f, err := os.Open(filepath.Join(ev, "connections.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	n := 0
	for sc.Scan() {
		var c report.Conn
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		byRow[key{c.Arm, c.Row}] = append(byRow[key{c.Arm, c.Row}], c.Report)
		n++
	}
	if n != 8 {
		t.Fatalf("%d records, want 4 rows of 2", n)
	}
	// The printed table, parsed.
	start := strings.Index(printed, "arm (rows)")
	end := strings.Index(printed[start:], "\n\n")
	lines, err := report.ParseText(printed[start : start+end+1])
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 2 {
		t.Fatalf("table has %d arms: %+v", len(lines), lines)
	}
	for _, l := range lines {
		var rows []key
		for k := range byRow {
			if k.arm == l.Arm {
				rows = append(rows, k)
			}
		}
		sort.Slice(rows, func(i, j int) bool { return rows[i].row < rows[j].row })
		if len(rows) != l.Rows || len(l.Goodput) != len(rows) {
			t.Fatalf("arm %s: table says %d rows (%v), records have %d", l.Arm, l.Rows, l.Goodput, len(rows))
		}
		for i, k := range rows {
			reps := byRow[k]
			g := make([]float64, len(reps))
			for j, r := range reps {
				g[j] = r.GoodputMBps
			}
			sort.Float64s(g)
			med := g[len(g)/2]
			if len(g)%2 == 0 {
				med = (g[len(g)/2-1] + g[len(g)/2]) / 2
			}
			if !close3(l.Goodput[i], med) {
				t.Errorf("arm %s row %d: table goodput %v, records' median %v", l.Arm, i, l.Goodput[i], med)
			}
		}
		for m := range osbench.DefaultMarks {
			lo, hi := math.Inf(1), math.Inf(-1)
			for _, k := range rows {
				sum := 0.0
				for _, r := range byRow[k] {
					sum += float64(r.Marks[m].FromFirst)
				}
				mean := sum / float64(len(byRow[k])) / 1e6
				lo, hi = math.Min(lo, mean), math.Max(hi, mean)
			}
			if !close3(l.Marks[m][0], lo) || !close3(l.Marks[m][1], hi) {
				t.Errorf("arm %s mark %v: table %v, records %v–%v", l.Arm, osbench.DefaultMarks[m], l.Marks[m], lo, hi)
			}
		}
	}
}

// close3 holds a printed figure (about three significant digits) to the
// value it rounds.
func close3(printed, v float64) bool {
	return math.Abs(printed-v) <= math.Max(0.005*math.Abs(v), 0.0005)
}

func TestRunRefusesToStartWithoutRules(t *testing.T) {
	ev := filepath.Join(t.TempDir(), "ev")
	_, err := Run(context.Background(), Config{Order: []string{"X"}, Defs: benchArms, Bytes: 1, Conns: 1, Evidence: ev})
	if !errors.Is(err, ErrNoRules) {
		t.Fatalf("err = %v, want ErrNoRules", err)
	}
	if _, err := os.Stat(ev); !os.IsNotExist(err) {
		t.Fatalf("an evidence folder was made for a run that never started")
	}
	_, err = Run(context.Background(), Config{Order: []string{"X"}, Defs: benchArms, Bytes: 1, Conns: 1, Evidence: ev, Rules: "bad rule", RulesName: "r.rules"})
	if err == nil || !strings.Contains(err.Error(), "r.rules:1:") {
		t.Fatalf("err = %v, want a parse error naming r.rules:1", err)
	}
}

func TestUnavailableArmMakesItsRulesNotJudged(t *testing.T) {
	t.Setenv("OSBENCH_QEMU_KERNEL", "") // no image: the QEMU hook cannot boot
	var out bytes.Buffer
	res, err := Run(context.Background(), Config{
		Order: []string{"X", "Z"}, Defs: Definitions{"X": "loopback", "Z": "boot:qemu"}, Bytes: 100_000, Conns: 1,
		Rules: "p: X within 1 of Z on goodput\n", Evidence: t.TempDir(), Out: &out, NoPlot: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdicts[0].Status.String() != "NOT JUDGED" || !strings.Contains(out.String(), "p: NOT JUDGED: arm Z: unavailable: ") {
		t.Fatalf("verdict %v\n%s", res.Verdicts[0], out.String())
	}
}

func TestVirtualRowsRepeatExactlyInBothDirections(t *testing.T) {
	for _, dir := range []osbench.Direction{osbench.Upload, osbench.Download} {
		// One connection alone, then three side by side: every connection of
		// a row on this deterministic preset (no loss, no jitter: t14 has
		// jitter) must report the same bytes.
		var runs [2][]report.Conn
		for i, n := range []int{1, 3} {
			a, err := newVirtualArm("B")
			if err != nil {
				t.Fatal(err)
			}
			c, err := a.RunRow(context.Background(), RowSpec{Preset: "clean-lan", Dir: dir, Bytes: 2_000_000, Conns: n, Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			runs[i] = c
		}
		a := runs[0][0].Report
		if a.Bytes != 2_000_000 || a.Direction != dir {
			t.Fatalf("%s: report %+v", dir, a)
		}
		ja, _ := json.Marshal(a)
		for _, c := range runs[1] {
			jb, _ := json.Marshal(c.Report)
			if !bytes.Equal(ja, jb) {
				t.Fatalf("%s: runs differ:\n%s\n%s", dir, ja, jb)
			}
		}
		if runs[0][0].Counters["tcp.sent.bytes"] < 2_000_000 {
			t.Errorf("%s: counters %v", dir, runs[0][0].Counters)
		}
	}
}

// TestRealTimeArmsCarryARowOnTheWire runs a small row of each real-time
// emulated arm on the real-time wire: the kernel's (where the host allows),
// and ours. Every byte arrives, the arm's counters are recorded (the
// wire's drop.input among them, for every arm), and the wire's lateness and
// its receivers' input lag are handed to the runner. No timing is asserted.
func TestRealTimeArmsCarryARowOnTheWire(t *testing.T) {
	for _, c := range []struct{ def, counter string }{
		{"linux", "tcp.retransmitted.bytes"}, {"linux:bbr", "tcp.retransmitted.bytes"}, {"rt:B", "tcp.sent.bytes"},
		{"rtk:D", "tcp.sent.bytes"},
	} {
		t.Run(c.def, func(t *testing.T) {
			a, err := Build(c.def, c.def, ArmOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if why := a.Unavailable(); why != "" {
				t.Skipf("%s unavailable here: %s", c.def, why)
			}
			if a.Timebase() != Real {
				t.Fatalf("time base %s, want %s", a.Timebase(), Real)
			}
			var late, lag wire.Lateness
			conns, err := a.RunRow(context.Background(), RowSpec{Preset: "t14", Dir: osbench.Upload, Bytes: 2_000_000, Conns: 2, Seed: 1,
				Late: func(l, g wire.Lateness) { late, lag = l, g }})
			if err != nil {
				t.Fatal(err)
			}
			if len(conns) != 2 {
				t.Fatalf("%d connections", len(conns))
			}
			for _, c2 := range conns {
				if c2.Report.Bytes != 2_000_000 || c2.Report.Version != osbench.Version {
					t.Fatalf("report %+v", c2.Report)
				}
				for _, name := range []string{c.counter, "nic.a2b.drop.input"} {
					if _, ok := c2.Counters[name]; !ok {
						t.Errorf("no %s counter: %v", name, c2.Counters)
					}
				}
			}
			if late.Frames == 0 {
				t.Errorf("the wire's lateness was not reported")
			}
			if lag.Frames == 0 {
				t.Errorf("the receivers' input lag was not reported")
			}
			t.Logf("%s: goodput %.1f MB/s; %v", c.def, conns[0].Report.GoodputMBps, late)
		})
	}
}

// TestKernelRowCountsRetransmittedBytes runs a kernel row on the pilot-2
// path (2% loss each way): the kernel's sockets retransmit what the wire
// lost, and the row's retrans is measured and above 0, so the judge's
// retrans lines about a kernel arm are judged.
func TestKernelRowCountsRetransmittedBytes(t *testing.T) {
	a, err := Build("linux", "linux", ArmOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if why := a.Unavailable(); why != "" {
		t.Skipf("linux unavailable here: %s", why)
	}
	conns, err := a.RunRow(context.Background(), RowSpec{Preset: "pilot-2", Dir: osbench.Upload, Bytes: 1_000_000, Conns: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := conns[0].Counters["linux.tcp.bytes-retrans.unread"]; ok {
		t.Skipf("this kernel does not count retransmitted bytes (%d sockets unread)", n)
	}
	row := report.Row{Arm: "linux", Conns: conns}
	v, ok := row.Metrics()["retrans"]
	if !ok {
		t.Fatalf("the kernel row's retrans is not measured: counters %v", conns[0].Counters)
	}
	t.Logf("retransmitted %v bytes; %d segments", v, conns[0].Counters["linux.tcp.retransmitted.segments"])
	if v == 0 {
		t.Errorf("a connection over a path losing 2%% each way retransmitted 0 bytes")
	}
}

func TestRevisionArmBuildsHeadAndRunsARowInASubprocess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a revision")
	}
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not in a git checkout: %v", err)
	}
	repo := strings.TrimSpace(string(out))
	a := newRevArm(repo, t.TempDir(), "HEAD", "B")
	if why := a.Unavailable(); why != "" {
		t.Skip(why)
	}
	conns, err := a.RunRow(context.Background(), RowSpec{Preset: "t14", Dir: osbench.Upload, Bytes: 1_000_000, Conns: 2, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(conns) != 2 || conns[1].Conn != 1 || conns[0].Timebase != Virtual {
		t.Fatalf("records %+v", conns)
	}
	for _, c := range conns {
		if c.Report.Bytes != 1_000_000 || c.Report.GoodputMBps <= 0 || c.Counters["tcp.sent.bytes"] < 1_000_000 {
			t.Fatalf("record %+v", c)
		}
	}
	if d := a.Describe(); len(d["commit"]) != 40 {
		t.Fatalf("describe %v", d)
	}
	if _, err := newRevArm(repo, t.TempDir(), "no-such-revision-xyz", "B").RunRow(context.Background(), RowSpec{Preset: "t14", Dir: osbench.Upload, Bytes: 1, Conns: 1}); err == nil || !strings.Contains(err.Error(), "does not resolve") {
		t.Fatalf("a bad revision: %v", err)
	}
}

func TestBootArmServesTheConnectionsItsCommandMakes(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash for the stand-in device")
	}
	// A stand-in device: bash dials the sink for each connection and sends a hello and the payload.
	const device = `bash -c 'for i in $(seq $OSBENCH_CONNS); do exec 3<>/dev/tcp/127.0.0.1/$OSBENCH_PORT; printf "osbench-lan/3 %s %s\n" $OSBENCH_DIR $OSBENCH_BYTES >&3; head -c $OSBENCH_BYTES /dev/zero >&3; cat <&3 >/dev/null; exec 3<&-; done'`
	a, err := newBootArm("DUT", device, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns, err := a.RunRow(context.Background(), RowSpec{Dir: osbench.Upload, Bytes: 300_000, Conns: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(conns) != 3 || conns[2].Report.Bytes != 300_000 {
		t.Fatalf("records %+v", conns)
	}
	exit3, _ := newBootArm("DUT", "echo booting; echo no card found; exit 3", "127.0.0.1:0")
	_, err = exit3.RunRow(context.Background(), RowSpec{Dir: osbench.Upload, Bytes: 1, Conns: 1})
	if err == nil || !strings.Contains(err.Error(), "exited") || !strings.Contains(err.Error(), "booting | no card found") {
		t.Fatalf("a command that boots nothing: %v", err)
	}
}

func TestQEMUHookRunsTheNamedArmOnALoopbackSink(t *testing.T) {
	for def, arm := range map[string]string{"boot:qemu": arms.Default(), "boot:qemu:B": "B", "boot:qemu:A": "A", "boot:qemu:gvisor": "gvisor"} {
		a, err := Build("Q", def, ArmOptions{})
		if err != nil {
			t.Fatal(err)
		}
		b := a.(*bootArm)
		if !b.qemu || b.arm != arm || b.sinkAddr != "127.0.0.1:0" || b.command != QEMUCommand {
			t.Errorf("%s: %+v", def, b)
		}
	}
	if _, err := Build("Q", "boot:qemu:C", ArmOptions{}); !errors.Is(err, ErrUnknownArm) {
		t.Errorf("boot:qemu:C: err = %v, want ErrUnknownArm", err)
	}
	if b, _ := Build("D", "boot:./flash.sh", ArmOptions{}); b.(*bootArm).qemu || b.(*bootArm).sinkAddr != "0.0.0.0:0" {
		t.Errorf("a plain boot command: %+v", b)
	}
	if !strings.Contains(QEMUCommand, "osbench.arm=$OSBENCH_ARM") || !strings.Contains(QEMUCommand, "10.0.2.2:$OSBENCH_PORT") {
		t.Errorf("the hook does not pass the arm and the sink: %s", QEMUCommand)
	}
}

func TestQEMUHookIsUnavailableWithoutAnImageFile(t *testing.T) {
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		t.Skip("no qemu-system-x86_64: the hook reports that first")
	}
	dir := t.TempDir()
	k := filepath.Join(dir, "vmlinux")
	os.WriteFile(k, []byte("x"), 0o644)
	t.Setenv("OSBENCH_QEMU_KERNEL", k)
	t.Setenv("OSBENCH_QEMU_INITRD", filepath.Join(dir, "missing.cpio"))
	a, _ := Build("Q", "boot:qemu", ArmOptions{})
	if why := a.Unavailable(); !strings.Contains(why, "OSBENCH_QEMU_INITRD") {
		t.Fatalf("unavailable = %q, want the missing initrd named", why)
	}
	t.Setenv("OSBENCH_QEMU_INITRD", k)
	if why := a.Unavailable(); why != "" {
		t.Fatalf("both files exist, yet unavailable: %q", why)
	}
}

// slowRealArm stands for a real-time emulated arm: its wire reports a p99
// lateness of 1 ms and an input lag with a 4 ms maximum, and it returns
// fixed records, so only the lateness rule decides its fate.
type slowRealArm struct{ loopbackArm }

func (s *slowRealArm) RunRow(ctx context.Context, spec RowSpec) ([]report.Conn, error) {
	spec.Late(wire.Lateness{Frames: 100, P50: time.Microsecond, P99: time.Millisecond, Max: 2 * time.Millisecond},
		wire.Lateness{Frames: 100, P50: 2 * time.Microsecond, P99: 30 * time.Microsecond, Max: 4 * time.Millisecond})
	m := osbench.NewMeter(time.Unix(0, 0))
	m.Add(time.Unix(0, 0), 1000)
	m.Add(time.Unix(1, 0), 1000)
	return []report.Conn{{Report: m.Report(time.Unix(1, 0), osbench.Upload, 2000)}}, nil
}

func TestLateRealTimeRowsAreShownButNotJudged(t *testing.T) {
	for _, c := range []struct {
		limit  time.Duration
		status string
	}{{999 * time.Microsecond, "NOT JUDGED"}, {time.Millisecond, "CONFIRMED"}} {
		cfg := Config{Order: []string{"R", "S"}, Defs: Definitions{"R": "loopback", "S": "loopback"}, Bytes: 1, Conns: 1,
			Rules: "p: R within 1000 of S on goodput\n", Evidence: t.TempDir(), NoPlot: true, LateLimit: c.limit}
		var out bytes.Buffer
		cfg.Out = &out
		res, err := runWith(context.Background(), cfg, map[string]Arm{"R": &slowRealArm{}, "S": &slowRealArm{}})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Verdicts[0].Status.String(); got != c.status {
			t.Fatalf("limit %v: %s, want %s\n%s", c.limit, got, c.status, out.String())
		}
		// The input lag is shown beside the lateness and rejects nothing.
		if !strings.Contains(out.String(), "wire lateness p50 0.001 ms, p99 1.000 ms, max 2.000 ms (100 frames); input lag p50 0.002 ms, p99 0.030 ms, max 4.000 ms (100 frames)") {
			t.Fatalf("no lateness and input lag shown:\n%s", out.String())
		}
		if c.status == "NOT JUDGED" && (!strings.Contains(out.String(), "REJECTED for the verdict") || !strings.Contains(res.Verdicts[0].Detail, "ran late")) {
			t.Fatalf("rejection not stated:\n%s", out.String())
		}
	}
}
