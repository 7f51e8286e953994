//go:build !linux

package bench

// newLinuxArm: the kernel-as-peer arm needs Linux namespaces and TUN devices.
func newLinuxArm(string) Arm {
	return &pendingArm{tb: Real, why: "the Linux arm needs a Linux host (namespaces and TUN devices)"}
}
