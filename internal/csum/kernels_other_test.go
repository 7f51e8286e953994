//go:build !amd64

package csum

func kernels() []kernelCase {
	return []kernelCase{{"generic", sumGeneric, true}}
}
