//go:build race

package hosttests

// raceEnabled: the race detector slows every goroutine several times over,
// so the soak and the largest transfers run smaller, or skip, under it.
const raceEnabled = true
