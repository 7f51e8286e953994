// Package linuxpeer makes the real Linux kernel's TCP a peer on nic/wire's
// path: a network namespace per kernel, a TUN device inside it, and a
// bridge that carries the device's IP packets to one end of a real-time
// wire (wire.NewRealTime) and back. Start puts a stack in this process on
// the wire's other end; StartPair puts a second kernel there, so a bench
// measures the kernel's own ramp on the same path as its other arms.
//
// The package has no path model of its own: rate, delay, queues, loss, ACK
// aggregation, statistics and the lateness of every frame are nic/wire's,
// from the same wire.Config and presets as a virtual-time run. Addresses
// come from 198.18.0.0/15 (RFC 2544 §C.2.2) and exist only inside the
// namespaces this package creates.
package linuxpeer

import "errors"

// ErrBadConfig reports a peer or ramp configuration that cannot be run; the
// message names the field.
var ErrBadConfig = errors.New("linuxpeer: bad config")
