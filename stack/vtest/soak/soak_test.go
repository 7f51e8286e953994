package soak

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// small is a soak of a few seconds of CPU: 20 virtual minutes, 300
// connections, 4 clients.
func small(seed int64) Config {
	return Config{Seed: seed, Duration: 20 * time.Minute, Conns: 300, Clients: 4, VanishEvery: 5 * time.Minute}
}

// figures is what two runs of one seed must share: everything but the wall
// time and the heap.
func figures(r *Report) Report {
	f := *r
	f.Wall, f.HeapStart, f.HeapEnd = 0, 0, 0
	return f
}

func TestSoakSameSeedGivesTheSameRunAndAnotherSeedAnother(t *testing.T) {
	var got []Report
	for _, seed := range []int64{7, 7, 8} {
		r, err := Run(small(seed))
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		got = append(got, figures(r))
	}
	if got[0] != got[1] {
		t.Fatalf("seed 7 twice:\n%+v\n%+v", got[0], got[1])
	}
	if got[0].BytesUp == got[2].BytesUp && got[0].Endings == got[2].Endings {
		t.Fatalf("seeds 7 and 8 gave the same run: %+v", got[0])
	}
}

func TestSoakRejectsBadConfigNamingTheField(t *testing.T) {
	for field, c := range map[string]Config{
		"Clients":     {Clients: 251},
		"Conns":       {Conns: -1},
		"Misbehave":   {Misbehave: 1.5},
		"Duration":    {Duration: -time.Second},
		"IdleTimeout": {IdleTimeout: -time.Second},
	} {
		_, err := Run(c)
		if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: error %v, want ErrBadConfig naming it", field, err)
		}
	}
}
