package csum

import (
	"testing"

	"golang.org/x/sys/unix"
)

// A kernel reads no byte outside b: each length ends where an unmapped page
// begins and starts where one ends, so a read past either edge faults.
func TestSumReadsOnlyItsBytes(t *testing.T) {
	page := unix.Getpagesize()
	mem, err := unix.Mmap(-1, 0, 3*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Skipf("mmap: %v", err)
	}
	defer unix.Munmap(mem)
	if err := unix.Mprotect(mem[:page], unix.PROT_NONE); err != nil {
		t.Skipf("mprotect: %v", err)
	}
	if err := unix.Mprotect(mem[2*page:], unix.PROT_NONE); err != nil {
		t.Skipf("mprotect: %v", err)
	}
	body := mem[page : 2*page]
	for i := range body {
		body[i] = byte(i*7 + 3)
	}
	eachKernel(t, func(t *testing.T) {
		for n := 0; n <= 300; n++ {
			for _, b := range [][]byte{body[len(body)-n:], body[:n]} {
				if got, want := Sum(b, 0), reference(b, 0); got != want {
					t.Fatalf("Sum(%d bytes at a page's edge) = %#04x, want %#04x", n, got, want)
				}
			}
		}
	})
}
