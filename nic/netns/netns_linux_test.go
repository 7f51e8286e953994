//go:build linux

package netns

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func skipUnlessRoot(t *testing.T) {
	t.Helper()
	if err := Check(); err != nil {
		t.Skipf("skipping: %v", err)
	}
}

func exists(name string) bool {
	out, _ := exec.Command("ip", "netns", "list").Output()
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == name {
			return true
		}
	}
	return false
}

// deadPid returns a pid with no process behind it.
func deadPid(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestCleanupStaleDeletesOnlyDeadOwnersNamespaces(t *testing.T) {
	skipUnlessRoot(t)
	stale := fmt.Sprintf("%s%d-1-stale", Prefix, deadPid(t))
	if err := Run("netns", "add", stale); err != nil {
		t.Skipf("skipping: cannot make namespaces here: %v", err)
	}
	t.Cleanup(func() {
		if exists(stale) {
			Run("netns", "delete", stale)
		}
	})
	mine, err := Create("live")
	if err != nil {
		t.Fatal(err) // Run("netns", "add") above already worked
	}
	t.Cleanup(func() { mine.Delete() })
	gone := CleanupStale()
	if exists(stale) {
		t.Errorf("stale namespace %s survived; CleanupStale returned %v", stale, gone)
	}
	if !exists(mine.Name()) {
		t.Errorf("CleanupStale deleted %s, which a live process owns", mine.Name())
	}
	if err := mine.Delete(); err != nil {
		t.Fatal(err)
	}
	if exists(mine.Name()) {
		t.Errorf("%s still exists after Delete", mine.Name())
	}
}

func TestSysctlStaysInsideTheNamespace(t *testing.T) {
	skipUnlessRoot(t)
	ns, err := Create("sysctl")
	if errors.Is(err, ErrUnsupported) {
		t.Skipf("skipping: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Delete() })
	const key = "/proc/sys/net/ipv4/tcp_no_metrics_save"
	host, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	want := "1"
	if strings.TrimSpace(string(host)) == "1" {
		want = "0"
	}
	if err := ns.Sysctl("net.ipv4.tcp_no_metrics_save", want); err != nil {
		t.Fatal(err)
	}
	var inside []byte
	if err := ns.Do(func() error { var err error; inside, err = os.ReadFile(key); return err }); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(inside)); got != want {
		t.Errorf("inside the namespace the sysctl reads %q, want %q", got, want)
	}
	after, _ := os.ReadFile(key)
	if string(after) != string(host) {
		t.Errorf("host sysctl changed from %q to %q", host, after)
	}
}
