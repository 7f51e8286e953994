//go:build race

package tcp_test

// raceEnabled: the race detector allocates, so allocation tests skip.
const raceEnabled = true
