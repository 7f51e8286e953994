//go:build !race

package rcvbuf

const raceEnabled = false
