//go:build race

package hosttests

// raceEnabled: the race detector slows a run about tenfold, so the soak
// runs a smaller size under it.
const raceEnabled = true
