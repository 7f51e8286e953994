//go:build linux

package tap

import (
	"errors"
	"net"
	"strings"
	"testing"
)

// TestBadOptionsNameTheField: an MTU or MAC the endpoint cannot use is an
// ErrBadConfig naming it, not a silent default.
func TestBadOptionsNameTheField(t *testing.T) {
	mac := net.HardwareAddr{0x02, 0, 0, 0, 0, 1}
	for _, tc := range []struct {
		field string // "" = valid
		tun   bool
		o     Options
	}{
		{"MTU", true, Options{MTU: 67}},
		{"MTU", true, Options{MTU: 65536}},
		{"MAC", false, Options{}},
		{"MAC", false, Options{MAC: net.HardwareAddr{1, 2, 3}}},
		{"MAC", false, Options{MAC: net.HardwareAddr{0x01, 0, 0x5e, 0, 0, 1}}}, // multicast
		{"", true, Options{MTU: 68}},
		{"", false, Options{MTU: 65535, MAC: mac}},
	} {
		_, err := New(&Device{cfg: Config{TUN: tc.tun}}, tc.o)
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%+v: %v, want an endpoint", tc.o, err)
		case tc.field != "" && (!errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), tc.field)):
			t.Errorf("%+v: %v, want ErrBadConfig naming %s", tc.o, err, tc.field)
		}
	}
}
