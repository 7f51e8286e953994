//go:build linux

// Package netnstest holds what tests that need a network namespace share:
// one made for the test, with IPv6 off, deleted when the test ends, or the
// test skipped, saying why, where namespaces cannot be made.
package netnstest

import (
	"errors"
	"testing"

	"github.com/netramp/netramp/nic/netns"
)

// New makes a namespace tagged tag for t, with IPv6 off (test links carry
// IPv4 only), and deletes it when t ends. Without root, /dev/net/tun or
// the right to make namespaces, t is skipped with the reason.
func New(t testing.TB, tag string) *netns.NS {
	t.Helper()
	if err := netns.Check(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	ns, err := netns.Create(tag)
	if errors.Is(err, netns.ErrUnsupported) {
		t.Skipf("skipping: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ns.Delete(); err != nil {
			t.Errorf("delete namespace: %v", err)
		}
	})
	if err := ns.DisableIPv6(); err != nil {
		t.Fatal(err)
	}
	return ns
}
