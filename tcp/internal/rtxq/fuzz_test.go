package rtxq

import (
	"encoding/binary"
	"testing"
	"time"
)

// FuzzQueue drives a queue with arbitrary pushes, ACKs with arbitrary SACK
// blocks (including ones beyond what was sent, reversed and wrapped), loss
// detection, retransmissions and timeouts: it must never panic, never hold
// more than its bound, and keep its running totals equal to its segments.
func FuzzQueue(f *testing.F) {
	f.Add([]byte{0, 10, 0, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0})
	f.Add([]byte{0, 200, 0, 0, 0, 0, 1, 0, 0, 255, 255, 255, 255, 255, 255, 255, 255, 3, 4})
	f.Fuzz(func(t *testing.T, in []byte) {
		q := New(64)
		var now time.Duration
		var off uint64
		for len(in) > 0 {
			op := in[0]
			in = in[1:]
			now += time.Duration(op>>4) * time.Millisecond
			arg := func() uint64 {
				if len(in) < 2 {
					return 0
				}
				v := uint64(binary.LittleEndian.Uint16(in))
				in = in[2:]
				if v == 0xffff && len(in) >= 8 {
					v = binary.LittleEndian.Uint64(in)
					in = in[8:]
				}
				return v
			}
			switch op & 7 {
			case 0:
				n := arg()
				if q.Push(off, off+n, now, n&1 == 1) == nil {
					off += n
				}
			case 1:
				una := arg()
				var sacks []Range
				for k := int(op>>4) & 3; k > 0; k-- {
					sacks = append(sacks, Range{arg(), arg()})
				}
				q.OnAck(una, sacks, now)
			case 2:
				q.DetectLoss(now, time.Duration(arg())*time.Microsecond)
			case 3:
				if s, ok := q.NextToRetransmit(); ok {
					q.Retransmitted(s.Start, now)
				}
			case 4:
				q.OnRTO(now)
			case 5:
				q.Retransmitted(arg(), now)
			case 6:
				q.SetInRecovery(op&0x10 != 0)
			case 7:
				q.PTO(time.Duration(arg()), int(op>>4), 0)
				q.ReoWnd(time.Duration(arg()))
			}
			if q.Len() > 64 {
				t.Fatalf("%d segments held, bound 64", q.Len())
			}
			check(t, q)
		}
	})
}
