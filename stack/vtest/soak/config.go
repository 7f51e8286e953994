package soak

import (
	"errors"
	"fmt"
	"time"
)

// ErrBadConfig is wrapped by Run's error for a Config it cannot run; the
// message names the field.
var ErrBadConfig = errors.New("soak: invalid config")

// Config sizes a soak. Zero fields take the defaults given.
type Config struct {
	Seed int64 // the stacks', the wires' and the run's draws; 0 means 1
	// Duration is the virtual time over which connections open (default 1 h);
	// the run then drains: it ends every connection and waits out TIME-WAIT.
	Duration time.Duration
	Conns    int // connections opened over Duration (default 1000)
	Clients  int // client stacks, each on its own path (default 8, at most 250)
	// MaxBytes bounds a request or a response; sizes are drawn log-uniform
	// in [1, MaxBytes], with one in twenty empty (default 256 KiB).
	MaxBytes int64
	// PathEvery is the mean time between two changes of a client's path
	// (default 5 s).
	PathEvery time.Duration
	// Misbehave is the share of connections whose client misbehaves: half
	// of them abort mid-transfer, half never read (default 0.05).
	Misbehave float64
	// VanishEvery is the mean time between two vanishings of some client
	// (default 30 min; negative: none).
	VanishEvery time.Duration
	// IdleTimeout ends a connection's end that moved no byte for that long,
	// counted as a timeout (default 2 min).
	IdleTimeout time.Duration
	// HeapSlack is how far the live heap at the end may exceed the start.
	// The default, 512 KiB and 64 KiB a client, covers what the stacks keep
	// at the size of their busiest moment (Go maps do not shrink: the
	// demuxer's, the port manager's; gVisor's buffer pool): about 40 KiB a
	// client measured, the same after 1000 connections as after 4000. A
	// leak of L bytes a connection end shows past it once 2·Conns·L does.
	HeapSlack uint64
}

// withDefaults fills zero fields.
func (c Config) withDefaults() Config {
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Duration == 0 {
		c.Duration = time.Hour
	}
	if c.Conns == 0 {
		c.Conns = 1000
	}
	if c.Clients == 0 {
		c.Clients = 8
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = 256 << 10
	}
	if c.PathEvery == 0 {
		c.PathEvery = 5 * time.Second
	}
	if c.Misbehave == 0 {
		c.Misbehave = 0.05
	}
	if c.VanishEvery == 0 {
		c.VanishEvery = 30 * time.Minute
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = 2 * time.Minute
	}
	if c.HeapSlack == 0 {
		c.HeapSlack = 512<<10 + 64<<10*uint64(c.Clients)
	}
	return c
}

// Validate reports the first field that cannot run, wrapping ErrBadConfig.
func (c Config) Validate() error {
	for _, f := range []struct {
		name string
		bad  bool
		v    any
	}{
		{"Duration", c.Duration < 0, c.Duration},
		{"Conns", c.Conns < 0, c.Conns},
		{"Clients", c.Clients < 0 || c.Clients > 250, c.Clients},
		{"MaxBytes", c.MaxBytes < 0, c.MaxBytes},
		{"PathEvery", c.PathEvery < 0, c.PathEvery},
		{"Misbehave", !(c.Misbehave >= 0 && c.Misbehave <= 1), c.Misbehave},
		{"IdleTimeout", c.IdleTimeout < 0, c.IdleTimeout},
	} {
		if f.bad {
			return fmt.Errorf("%w: %s = %v", ErrBadConfig, f.name, f.v)
		}
	}
	return nil
}
