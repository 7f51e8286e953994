package tcp

import (
	"reflect"

	"gvisor.dev/gvisor/pkg/tcpip"
)

// stdClockType is the dynamic type of gVisor's standard clock, the one a
// stack made without a Clock option runs on.
var stdClockType = reflect.TypeOf(tcpip.NewStdClock())

// isStdClock reports whether c is gVisor's standard clock. Its monotonic
// time is Go's monotonic clock since the clock was made, plus a constant
// offset: the time since the protocol was made is the same on either, so
// now may read Go's clock directly. That is one call where the clock's
// interface took three (time.Since, MonotonicTime.Add and Sub): the clock
// was 4.3% of the CPU of a bulk transfer at MTU 9000, one core (osbench
// cpu), read per segment, per read and per timer. Any other clock (a
// virtual one in tests) is read through its interface.
func isStdClock(c tcpip.Clock) bool {
	// control:tcp-std-clock-through-interface
	return c != nil && reflect.TypeOf(c) == stdClockType
}
