package i219_test

import (
	"testing"

	"github.com/netramp/netramp/nic/bursttest"
	"github.com/netramp/netramp/nic/i219"
	"github.com/netramp/netramp/nic/i219/fake"
)

// TestPollDeliversItsFramesAsOneBurst: the frames one Poll pass reaps reach
// the stack between one BeginBurst and one EndBurst, at most PollBatch of
// them; a pass of one frame is no burst.
func TestPollDeliversItsFramesAsOneBurst(t *testing.T) {
	dev, ep := open(t, fake.Options{}, i219.Config{PollBatch: 4})
	log := &bursttest.Log{}
	ep.Attach(log)
	for i := range 6 {
		dev.Inject(fake.RXFrame{Data: udpDatagram(7, []byte{byte(i)})})
	}
	for _, want := range []string{"begin frame frame frame frame end", "begin frame frame end", ""} {
		ep.Poll()
		if got := log.Take(); got != want {
			t.Fatalf("a pass delivered %q, want %q", got, want)
		}
	}
	dev.Inject(fake.RXFrame{Data: udpDatagram(7, []byte("one"))})
	ep.Poll()
	if got := log.Take(); got != "frame" {
		t.Fatalf("a pass of one frame delivered %q, want no burst", got)
	}
}
