package bench

import (
	"context"
	"slices"
)

// rowResult is a row's result type: a value that sums its rounds (add).
type rowResult[R any] interface {
	*R
	add(R)
}

// abbaRow runs one row of a CPU comparison, the one home of its schedule
// for the in-memory rows (CPU) and the kernel-peer rows (KernelCPU): one
// unmeasured transfer of each TCP in tcps, then rounds in which they take
// turns in cpuTCPs' order, reversed every other round (ABBA, so a machine
// whose speed drifts during the row weighs on both alike), each moving
// bytes/rounds (the last round the remainder, so the row moves exactly
// bytes). run makes one transfer; each TCP's measured rounds are summed
// into a copy of empty, and the row's results come back in cpuTCPs' order.
func abbaRow[R any, P rowResult[R]](ctx context.Context, tcps []string, rounds int, bytes int64, empty R, run func(name string, n int64) (R, error)) ([]R, error) {
	// The warm-up: whichever TCP ran first in a row paid for the process's
	// heap and pools growing to the row's packet sizes (a 250 MB transfer at
	// MTU 1500 over GRO: 0.41 CPU-s/GB run first, 0.32 after another), and
	// that was always ours.
	// control:bench-cpu-no-warm-up
	for _, name := range cpuTCPs {
		if slices.Contains(tcps, name) {
			if _, err := run(name, min(bytes/int64(rounds), warmBytes)); err != nil {
				return nil, err
			}
		}
	}
	row := map[string]*R{}
	for round := range rounds {
		order := slices.Clone(cpuTCPs)
		// control:bench-cpu-rounds-one-order
		// control:bench-kpeer-rounds-one-order
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, name := range order {
			if !slices.Contains(tcps, name) {
				continue
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			n := bytes / int64(rounds)
			if round == rounds-1 {
				n = bytes - n*int64(rounds-1)
			}
			r, err := run(name, n)
			if err != nil {
				return nil, err
			}
			if row[name] == nil {
				sum := empty
				row[name] = &sum
			}
			P(row[name]).add(r)
		}
	}
	var out []R
	for _, name := range cpuTCPs {
		if r := row[name]; r != nil {
			out = append(out, *r)
		}
	}
	return out, nil
}
