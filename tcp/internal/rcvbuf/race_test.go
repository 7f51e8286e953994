//go:build race

package rcvbuf

// raceEnabled: the race detector allocates, so allocation tests skip.
const raceEnabled = true
