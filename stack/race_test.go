//go:build race

package stack

// raceEnabled: the race detector allocates, so allocation tests skip.
const raceEnabled = true
