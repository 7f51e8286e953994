// Package netns creates and enters Linux network namespaces for tests and
// benches that use the real kernel as a peer. Every namespace it creates is
// named with a prefix and the creating process's pid, so a later run can
// delete what a crashed run left behind without touching anyone else's.
//
// Addresses used inside these namespaces come from 198.18.0.0/15, the
// benchmarking range of RFC 2544 §C.2.2, so nothing leaves the machine.
package netns

import "errors"

// ErrUnsupported reports a host on which namespaces or TAP devices cannot be
// used (not Linux, not root, no /dev/net/tun, no iproute2). Tests skip on it.
var ErrUnsupported = errors.New("netns: host cannot create network namespaces and TAP devices")

// Prefix begins the name of every namespace this package creates.
const Prefix = "netramp-"
