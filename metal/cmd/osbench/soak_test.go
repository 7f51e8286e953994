package main

import (
	"testing"
	"time"
)

func TestSoakFlagsRejectWhatCannotRunAndDefaultTo24Hours(t *testing.T) {
	for _, args := range [][]string{
		{"-hours", "0"}, {"-hours", "-1"}, {"-hours", "NaN"}, {"-clients", "0"}, {"-clients", "251"},
		{"-conns", "-5"}, {"-max-bytes", "0"}, {"extra"}, {"-nosuch"},
	} {
		if _, err := soakConfig(args); err == nil {
			t.Errorf("soak %q: no error", args)
		}
	}
	cfg, err := soakConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Duration != 24*time.Hour || cfg.Conns != 48000 || cfg.Clients != 16 || cfg.Seed != 1 {
		t.Fatalf("defaults: %+v, want 24 h, 48000 connections, 16 clients, seed 1", cfg)
	}
}
