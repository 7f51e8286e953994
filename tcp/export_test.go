package tcp

import gstack "gvisor.dev/gvisor/pkg/tcpip/stack"

// SetChallengeLimit sets the stack-wide challenge-ACK limit per second of
// s's netramp TCP, so a test reaches it with a few connections.
func SetChallengeLimit(s *gstack.Stack, perSecond int) {
	p := s.TransportProtocolInstance(ProtocolNumber).(*protocol)
	p.challenges.limit = perSecond
	p.challenges.max = 0
}
