//go:build !linux

package wire

import "time"

// setupReleaser has no thread tuning off Linux.
func setupReleaser() bool { return false }

// preciseSleep falls back to the runtime's sleep.
func preciseSleep(d time.Duration) { time.Sleep(d) }
