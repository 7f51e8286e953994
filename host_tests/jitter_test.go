package hosttests

import (
	"fmt"
	"testing"
	"time"

	"github.com/netramp/netramp/cc"
	"github.com/netramp/netramp/nic/wire"
	"github.com/netramp/netramp/stack/vtest"
	"github.com/netramp/netramp/tcp"
)

// jitteryDeepQueue is issue 10's path: 10 Mbit/s, an 80 ms drop-tail queue,
// and jitter that keeps order, so frames (and ACKs) bunch up and arrive
// together, and several sends share one instant.
func jitteryDeepQueue(delay time.Duration) wire.Config {
	q := int(10e6 / 8 * 80 / 1000)
	return wire.Config{
		AtoB: wire.Dir{RateBps: 10e6, Delay: delay, QueueBytes: q, Jitter: 10 * time.Millisecond},
		BtoA: wire.Dir{RateBps: 10e6, Delay: delay, Jitter: 10 * time.Millisecond},
	}
}

func TestJitteryDeepQueueRetransmitsOnlyWhatWasDropped(t *testing.T) {
	// The queue drops the only frames lost, so every retransmitted byte
	// beyond the dropped ones reached the receiver twice. Allow 5% for
	// short tail segments and loss probes.
	const payload = 1448 // MSS 1460 less the timestamp option
	for _, arm := range []cc.Arm{cc.ArmA, cc.ArmB} {
		for _, delay := range []time.Duration{time.Millisecond, 10 * time.Millisecond} {
			t.Run(fmt.Sprintf("%v/%v", arm, delay), func(t *testing.T) {
				res, err := vtest.OneTransfer(vtest.Run{Wire: jitteryDeepQueue(delay),
					Sender: tcp.Options{Arm: arm}, Bytes: 8 << 20, Seed: 3, Discard: true})
				if err != nil {
					t.Fatal(err)
				}
				retx := res.Sender["tcp.retransmitted.bytes"]
				spurious := res.Sender["tcp.retransmitted.spurious.bytes"]
				dropped := res.AtoB.DropQueue * payload
				t.Logf("retransmitted %d B, dropped %d B, spurious %d B", retx, dropped, spurious)
				if retx*100 > dropped*105 {
					t.Errorf("retransmitted %d B for %d B dropped: more than 5%% resent needlessly", retx, dropped)
				}
				if spurious*100 > retx*5 {
					t.Errorf("spurious retransmissions %d B of %d B retransmitted, want under 5%%", spurious, retx)
				}
			})
		}
	}
}
