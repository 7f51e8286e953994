//go:build linux

package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// cardIRQs sums the interrupt counts /proc/interrupts shows for the card's
// user-space driver (uio_pci_generic's line, or vfio's INTx/MSI lines): the
// proof that the backend delivers interrupts rather than the driver's poll
// timeout carrying the traffic.
func cardIRQs() uint64 {
	f, err := os.Open("/proc/interrupts")
	if err != nil {
		return 0
	}
	defer f.Close()
	var sum uint64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, "uio") && !strings.Contains(line, "vfio") {
			continue
		}
		fields := strings.Fields(line)
		for _, fld := range fields[1:] {
			n, err := strconv.ParseUint(fld, 10, 64)
			if err != nil {
				break
			}
			sum += n
		}
	}
	return sum
}
