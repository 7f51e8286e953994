package i219_test

import (
	"strings"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netramp/netramp/nic"
	"github.com/netramp/netramp/nic/i219"
	"github.com/netramp/netramp/nic/i219/fake"
)

// burstLog is a dispatcher that listens for bursts and logs, in order,
// "begin", "end" and one "frame" a delivery.
type burstLog struct{ events []string }

func (l *burstLog) DeliverNetworkPacket(tcpip.NetworkProtocolNumber, *stack.PacketBuffer) {
	l.events = append(l.events, "frame")
}
func (l *burstLog) DeliverLinkPacket(tcpip.NetworkProtocolNumber, *stack.PacketBuffer) {}
func (l *burstLog) BeginBurst()                                                        { l.events = append(l.events, "begin") }
func (l *burstLog) EndBurst()                                                          { l.events = append(l.events, "end") }

var _ nic.BurstDispatcher = (*burstLog)(nil)

// TestPollDeliversItsFramesAsOneBurst: the frames one Poll pass reaps reach
// the stack between one BeginBurst and one EndBurst, at most PollBatch of
// them; a pass of one frame is no burst.
func TestPollDeliversItsFramesAsOneBurst(t *testing.T) {
	dev, ep := open(t, fake.Options{}, i219.Config{PollBatch: 4})
	log := &burstLog{}
	ep.Attach(log)
	for i := range 6 {
		dev.Inject(fake.RXFrame{Data: udpDatagram(7, []byte{byte(i)})})
	}
	for _, want := range []string{"begin frame frame frame frame end", "begin frame frame end", ""} {
		ep.Poll()
		if got := strings.Join(log.events, " "); got != want {
			t.Fatalf("a pass delivered %q, want %q", got, want)
		}
		log.events = nil
	}
	dev.Inject(fake.RXFrame{Data: udpDatagram(7, []byte("one"))})
	ep.Poll()
	if got := strings.Join(log.events, " "); got != "frame" {
		t.Fatalf("a pass of one frame delivered %q, want no burst", got)
	}
}
