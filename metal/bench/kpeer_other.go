//go:build !linux

package bench

import (
	"context"
	"errors"
)

func kernelPeerUnavailable() string {
	return "the kernel peer needs a Linux host (network namespaces and TAP devices)"
}

func newKernelPeer(context.Context) (kernelPeer, error) {
	return nil, errors.New("bench: cpu -peer linux: " + kernelPeerUnavailable())
}

// RunKernelPeerHelper fails: the helper runs only on Linux.
func RunKernelPeerHelper() error { return errors.New("bench: " + kernelPeerUnavailable()) }
