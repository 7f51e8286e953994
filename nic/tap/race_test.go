//go:build race

package tap_test

// raceEnabled: the race detector allocates, so allocation tests skip.
const raceEnabled = true
