package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/netramp/netramp/metal/arms"
	"github.com/netramp/netramp/metal/report"
)

// revArm is a build of another revision of this repository: the runner checks
// the revision out with `git worktree add`, builds its osbench into its own
// binary, and runs `osbench row` as a subprocess that prints one JSON record
// (report.Conn) per connection. So a revision with a change reverted runs
// against the change, each in its own process, on the same path.
type revArm struct {
	repo, work, rev, inner string

	once     sync.Once
	bin      string
	commit   string
	buildErr error
	vt       string
}

func newRevArm(repo, work, rev, inner string) *revArm {
	return &revArm{repo: repo, work: work, rev: rev, inner: inner}
}

func (a *revArm) Unavailable() string {
	if a.repo == "" {
		return "no repository to build revisions from"
	}
	if _, err := exec.LookPath("git"); err != nil {
		return "git is not installed"
	}
	return ""
}

// Timebase is the inner arm's, as this build knows it.
func (a *revArm) Timebase() string {
	if a.vt != "" {
		return a.vt
	}
	if arms.Is(a.inner) {
		return Virtual
	}
	return Real
}

func (a *revArm) PathName(preset string) string { return "wire preset " + preset }

func (a *revArm) Describe() map[string]string {
	return map[string]string{"revision": a.rev, "commit": a.commit, "arm": a.inner, "binary": a.bin}
}

// build checks out and builds the revision once.
func (a *revArm) build(ctx context.Context) error {
	a.once.Do(func() {
		out, err := exec.CommandContext(ctx, "git", "-C", a.repo, "rev-parse", "--verify", a.rev+"^{commit}").Output()
		if err != nil {
			a.buildErr = fmt.Errorf("bench: revision %q does not resolve: %v", a.rev, err)
			return
		}
		a.commit = strings.TrimSpace(string(out))
		work := a.work
		if work == "" {
			work = os.TempDir()
		}
		a.bin = filepath.Join(work, "osbench-"+a.commit[:12])
		if _, err := os.Stat(a.bin); err == nil {
			return
		}
		tree, err := os.MkdirTemp(work, "osbench-tree-")
		if err != nil {
			a.buildErr = err
			return
		}
		defer os.RemoveAll(tree)
		wt := filepath.Join(tree, "src")
		if out, err := exec.CommandContext(ctx, "git", "-C", a.repo, "worktree", "add", "--detach", wt, a.commit).CombinedOutput(); err != nil {
			a.buildErr = fmt.Errorf("bench: git worktree add %s: %v: %s", a.rev, err, out)
			return
		}
		defer exec.Command("git", "-C", a.repo, "worktree", "remove", "--force", wt).Run()
		if _, err := os.Stat(filepath.Join(wt, "metal", "cmd", "osbench")); err != nil {
			a.buildErr = fmt.Errorf("bench: revision %s has no metal/cmd/osbench to build", a.rev)
			return
		}
		cmd := exec.CommandContext(ctx, "go", "build", "-o", a.bin, "./metal/cmd/osbench")
		cmd.Dir = wt
		cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
		if out, err := cmd.CombinedOutput(); err != nil {
			a.buildErr = fmt.Errorf("bench: building osbench at %s: %v: %s", a.rev, err, out)
		}
	})
	return a.buildErr
}

func (a *revArm) RunRow(ctx context.Context, spec RowSpec) ([]report.Conn, error) {
	if err := a.build(ctx); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, a.bin, "row", "-arm", a.inner, "-preset", spec.Preset, "-dir", string(spec.Dir),
		"-bytes", strconv.FormatInt(spec.Bytes, 10), "-conns", strconv.Itoa(spec.Conns), "-seed", strconv.FormatInt(spec.Seed, 10))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: starting %s: %w", a.bin, err)
	}
	conns, perr := ReadConns(stdout, spec.Progress)
	werr := cmd.Wait()
	if perr != nil {
		return conns, perr
	}
	if werr != nil {
		return conns, fmt.Errorf("bench: %s row exited: %v: %s", a.rev, werr, lastLine(stderr.String()))
	}
	if len(conns) > 0 {
		a.vt = conns[0].Timebase
	}
	return conns, nil
}

// ReadConns reads report.Conn JSON lines (what `osbench row` prints).
func ReadConns(r interface{ Read([]byte) (int, error) }, progress func(int)) ([]report.Conn, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	var out []report.Conn
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var c report.Conn
		if err := json.Unmarshal(line, &c); err != nil {
			return out, fmt.Errorf("bench: subprocess record %d: %v", len(out)+1, err)
		}
		out = append(out, c)
		if progress != nil {
			progress(len(out))
		}
	}
	return out, sc.Err()
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
