package bench

import (
	"fmt"
	"os"
	"testing"
)

// TestMain lets the test binary be the kernel peer's helper, as osbench is
// for osbench cpu -peer linux: KernelCPU starts this program again inside
// its namespace.
func TestMain(m *testing.M) {
	if IsKernelPeerHelper() {
		if err := RunKernelPeerHelper(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
