//go:build linux

package stack

import (
	"net"
	"testing"

	gstack "gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netramp/netramp/nic/netns"
	"github.com/netramp/netramp/nic/netns/netnstest"
	"github.com/netramp/netramp/nic/tap"
)

// soakTAPLinks is two TAP devices on a Linux bridge in a namespace of their
// own, as the two stacks' links: frames cross the kernel, and each
// endpoint's reader goroutine delivers them, concurrently with the
// stacks' writers. It skips, saying why, without root, /dev/net/tun or
// the right to make namespaces.
func soakTAPLinks(t *testing.T) (la, lb gstack.LinkEndpoint) {
	ns := netnstest.New(t, "soak")
	if err := ns.IP("link", "add", "nrsoakbr", "type", "bridge", "forward_delay", "0"); err != nil {
		t.Fatal(err)
	}
	var eps [2]gstack.LinkEndpoint
	for i, mac := range []net.HardwareAddr{{0x02, 0, 0x5e, 0, 1, 1}, {0x02, 0, 0x5e, 0, 1, 2}} {
		name := []string{"nrsoak0", "nrsoak1"}[i]
		dev, err := tap.Open(tap.Config{Name: name, Netns: ns.Path()})
		if err != nil {
			t.Fatal(err)
		}
		if err := ns.IP("link", "set", "dev", name, "master", "nrsoakbr"); err != nil {
			dev.Close()
			t.Fatal(err)
		}
		if err := ns.SetupLink(netns.LinkConfig{Dev: name}); err != nil {
			dev.Close()
			t.Fatal(err)
		}
		ep, err := tap.New(dev, tap.Options{MAC: mac})
		if err != nil {
			dev.Close()
			t.Fatal(err)
		}
		eps[i] = ep // the stack closes it, and its device with it
	}
	if err := ns.IP("link", "set", "dev", "nrsoakbr", "up"); err != nil {
		t.Fatal(err)
	}
	return eps[0], eps[1]
}
