// Package bursttest gives link tests one dispatcher that records how a link
// delivers: each frame, and the burst marks (nic.BeginBurst, nic.EndBurst)
// around them.
package bursttest

import (
	"strings"
	"sync"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netramp/netramp/nic"
)

// Log is a dispatcher that listens for bursts and logs, in order, "begin",
// "end" and one "frame" a delivery. A link's reader goroutine may call it
// while the test reads it.
type Log struct {
	mu     sync.Mutex
	events []string
	frames int
}

var _ nic.BurstDispatcher = (*Log)(nil)

func (l *Log) log(ev string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, ev)
	if ev == "frame" {
		l.frames++
	}
}

// DeliverNetworkPacket implements stack.NetworkDispatcher.
func (l *Log) DeliverNetworkPacket(tcpip.NetworkProtocolNumber, *stack.PacketBuffer) {
	l.log("frame")
}

// DeliverLinkPacket implements stack.NetworkDispatcher.
func (l *Log) DeliverLinkPacket(tcpip.NetworkProtocolNumber, *stack.PacketBuffer) {}

// BeginBurst implements nic.BurstDispatcher.
func (l *Log) BeginBurst() { l.log("begin") }

// EndBurst implements nic.BurstDispatcher.
func (l *Log) EndBurst() { l.log("end") }

// Take returns the events logged since the last Take, joined by spaces.
func (l *Log) Take() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := strings.Join(l.events, " ")
	l.events = nil
	return s
}

// Snapshot is the log so far and its frame count.
func (l *Log) Snapshot() ([]string, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.events...), l.frames
}
