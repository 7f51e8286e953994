//go:build !race

package hosttests

const raceEnabled = false
