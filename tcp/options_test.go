package tcp_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/netramp/netramp/cc"
	"github.com/netramp/netramp/tcp"
)

// TestBadOptionsAreErrorsNamingTheField pins the charter's edge rule: every
// field out of range is an error naming it from NewProtocolFactory, never a
// panic later nor a silent default; every edge of a range is accepted.
func TestBadOptionsAreErrorsNamingTheField(t *testing.T) {
	for _, tc := range []struct {
		field string // "" = valid
		o     tcp.Options
	}{
		{"Arm", tcp.Options{Arm: cc.Arm(7)}},
		{"Arm", tcp.Options{Arm: cc.Arm(-1)}},
		{"InitialWindow", tcp.Options{InitialWindow: 100000}},
		{"InitialWindow", tcp.Options{InitialWindow: -1}},
		{"SendBufferMax", tcp.Options{SendBufferMax: -1}},
		{"SendBufferMax", tcp.Options{SendBufferMax: tcp.MinBufferMax - 1}},
		{"SendBufferMax", tcp.Options{SendBufferMax: tcp.MaxBufferMax + 1}},
		{"ReceiveBufferMax", tcp.Options{ReceiveBufferMax: -1}},
		{"ReceiveBufferMax", tcp.Options{ReceiveBufferMax: 100}},
		{"ReceiveBufferMax", tcp.Options{ReceiveBufferMax: tcp.MaxBufferMax + 1}},
		{"DelayedAck", tcp.Options{DelayedAck: tcp.DelayedAckLimit}},
		{"DelayedAck", tcp.Options{DelayedAck: time.Hour}},
		{"StretchAck", tcp.Options{StretchAck: -1}},
		{"StretchAck", tcp.Options{StretchAck: tcp.MaxStretchAck + 1}},
		{"TimeWait", tcp.Options{TimeWait: -time.Second}},

		{"", tcp.Options{}},
		{"", tcp.Options{Arm: cc.ArmA, InitialWindow: 4096, Pacing: true}},
		{"", tcp.Options{SendBufferMax: tcp.MinBufferMax, ReceiveBufferMax: tcp.MaxBufferMax}},
		{"", tcp.Options{DelayedAck: -1, StretchAck: tcp.MaxStretchAck, TimeWait: time.Millisecond}},
		{"", tcp.Options{DelayedAck: tcp.DelayedAckLimit - 1, NoSACK: true, NoTimestamps: true, NoWindowScale: true}},
	} {
		f, err := tcp.NewProtocolFactory(tc.o)
		switch {
		case tc.field == "" && (err != nil || f == nil):
			t.Errorf("%+v: error %v, want a factory", tc.o, err)
		case tc.field != "" && (!errors.Is(err, tcp.ErrBadOptions) || !strings.Contains(err.Error(), tc.field)):
			t.Errorf("%+v: error %v, want ErrBadOptions naming %s", tc.o, err, tc.field)
		case tc.field != "" && f != nil:
			t.Errorf("%+v: a factory alongside the error", tc.o)
		}
	}
}
