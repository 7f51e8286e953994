package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/netramp/netramp/stack/vtest/soak"
)

// runSoak runs stack/vtest/soak and prints its figures; a failed check
// is the error (the exit status).
func runSoak(args []string) error {
	cfg, err := soakConfig(args)
	if err != nil {
		return err
	}
	rep, err := soak.Run(cfg)
	if rep != nil {
		rep.WriteText(os.Stdout)
	}
	if err != nil {
		return fmt.Errorf("soak failed:\n%w", err)
	}
	fmt.Println("soak: every check held")
	return nil
}

// soakConfig parses the soak's flags.
func soakConfig(args []string) (soak.Config, error) {
	fs := flag.NewFlagSet("osbench soak", flag.ContinueOnError)
	hours := fs.Float64("hours", 24, "virtual hours over which connections open (the drain follows)")
	seed := fs.Int64("seed", 1, "seed of the stacks, the paths and the draws: same seed, same run")
	conns := fs.Int("conns", 0, "connections over the run (0: 2000 a virtual hour)")
	clients := fs.Int("clients", 16, "client stacks, each on its own path to the one server (1 to 250)")
	maxBytes := fs.Int64("max-bytes", 1<<20, "largest request or response, bytes")
	if err := fs.Parse(args); err != nil {
		return soak.Config{}, err
	}
	if fs.NArg() > 0 {
		return soak.Config{}, fmt.Errorf("soak: unexpected arguments %q", fs.Args())
	}
	if !(*hours > 0) || *hours > 24*365 {
		return soak.Config{}, fmt.Errorf("soak: -hours %v is not within (0, 8760]", *hours)
	}
	if *clients < 1 {
		return soak.Config{}, fmt.Errorf("soak: -clients %d is not a positive count", *clients)
	}
	if *conns < 0 {
		return soak.Config{}, fmt.Errorf("soak: -conns %d is negative", *conns)
	}
	if *maxBytes < 1 {
		return soak.Config{}, fmt.Errorf("soak: -max-bytes %d is not a positive size", *maxBytes)
	}
	if *conns == 0 {
		*conns = int(2000 * *hours)
	}
	cfg := soak.Config{Seed: *seed, Duration: time.Duration(*hours * float64(time.Hour)), Conns: max(*conns, 1), Clients: *clients, MaxBytes: *maxBytes}
	return cfg, cfg.Validate()
}
