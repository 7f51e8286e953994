package qemu

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"testing"
)

// TestDriverPassesEveryQEMUCheck runs ci/qemu/run.sh and requires its
// summary to report no failure. It takes about two minutes under TCG.
func TestDriverPassesEveryQEMUCheck(t *testing.T) {
	if os.Getenv("NETRAMP_QEMU") != "1" {
		t.Skip("set NETRAMP_QEMU=1 to boot QEMU (ci/qemu/run.sh, about two minutes, root)")
	}
	if runtime.GOOS != "linux" {
		t.Skip("QEMU checks run on Linux hosts")
	}
	script, err := filepath.Abs(filepath.Join("..", "..", "..", "ci", "qemu", "run.sh"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("bash", script).CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	m := regexp.MustCompile(`(?m)^qemu: (\d+) passed, (\d+) failed$`).FindSubmatch(out)
	if m == nil || string(m[2]) != "0" || string(m[1]) == "0" {
		t.Fatalf("no clean summary line in the output (%q)", m)
	}
}
