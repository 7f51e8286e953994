package csum

import "golang.org/x/sys/cpu"

// haveAVX2 is whether this CPU and OS run sumAVX2.
var haveAVX2 = cpu.X86.HasAVX2

func init() {
	if haveAVX2 {
		kernel = sumAVX2
	}
}

// sumAVX2 is kernel with AVX2 (sum_amd64.s).
//
//go:noescape
func sumAVX2(b []byte) uint64
