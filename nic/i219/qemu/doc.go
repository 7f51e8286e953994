// Package qemu holds the Go entry point to ci/qemu/run.sh: a test, skipped
// unless NETRAMP_QEMU=1, that boots QEMU's e1000e and runs the driver's
// checks in the guest.
package qemu
