//go:build !linux

package bench

// newKernelSinkArm: the kernel's receiver needs Linux namespaces and TUN
// devices.
func newKernelSinkArm(string) (Arm, error) {
	return &pendingArm{tb: Real, why: "the rtk: arms need a Linux host (namespaces and TUN devices)"}, nil
}
