//go:build !unix

package bench

import "time"

// processCPU is unknown off unix: getrusage is not there, so CPU figures read 0.
func processCPU() time.Duration { return 0 }
