// Package linuxpeer makes the real Linux kernel's TCP a peer of a netramp
// stack: a network namespace per run, a TAP device inside it, and a
// userspace path emulator (rate, delay, loss, drop-tail queue) between the
// TAP and a link endpoint that the stack in this process uses. A second mode
// joins two namespaces, both ends kernel sockets, through the same emulator,
// so a bench can measure the kernel's own ramp on the same emulated path.
//
// The host has no netem, so delay and loss are applied here; each frame's
// lateness (release time versus schedule) is recorded so a bench can reject
// a run on an overloaded machine. Addresses come from 198.18.0.0/15 (RFC
// 2544 §C.2.2) and exist only inside the namespaces this package creates.
package linuxpeer

import "errors"

// ErrBadConfig reports a path, peer or ramp configuration that cannot be run.
var ErrBadConfig = errors.New("linuxpeer: bad config")
