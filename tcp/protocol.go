// Package tcp is netramp's TCP (RFC 9293), a gVisor transport protocol
// registered as protocol 6.
package tcp

import (
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/waiter"
)

// ProtocolNumber is TCP's IP protocol number.
const ProtocolNumber = header.TCPProtocolNumber

type protocol struct {
	s    *stack.Stack
	opts Options
}

// NewProtocolFactory returns a factory that registers this TCP in a gVisor
// stack (stack.Options.TransportProtocols).
func NewProtocolFactory(o Options) stack.TransportProtocolFactory {
	return func(s *stack.Stack) stack.TransportProtocol {
		return &protocol{s: s, opts: o}
	}
}

func (p *protocol) Number() tcpip.TransportProtocolNumber { return ProtocolNumber }

func (p *protocol) NewEndpoint(netProto tcpip.NetworkProtocolNumber, wq *waiter.Queue) (tcpip.Endpoint, tcpip.Error) {
	return nil, &tcpip.ErrNotSupported{}
}

func (p *protocol) NewRawEndpoint(tcpip.NetworkProtocolNumber, *waiter.Queue) (tcpip.Endpoint, tcpip.Error) {
	return nil, &tcpip.ErrNotSupported{}
}

func (p *protocol) MinimumPacketSize() int { return header.TCPMinimumSize }

func (p *protocol) ParsePorts(b []byte) (src, dst uint16, err tcpip.Error) {
	h := header.TCP(b)
	return h.SourcePort(), h.DestinationPort(), nil
}

func (p *protocol) HandleUnknownDestinationPacket(id stack.TransportEndpointID, pkt *stack.PacketBuffer) stack.UnknownDestinationPacketDisposition {
	return stack.UnknownDestinationPacketHandled
}

func (p *protocol) SetOption(tcpip.SettableTransportProtocolOption) tcpip.Error {
	return &tcpip.ErrUnknownProtocolOption{}
}

func (p *protocol) Option(tcpip.GettableTransportProtocolOption) tcpip.Error {
	return &tcpip.ErrUnknownProtocolOption{}
}

func (p *protocol) Close()   {}
func (p *protocol) Wait()    {}
func (p *protocol) Pause()   {}
func (p *protocol) Resume()  {}
func (p *protocol) Restore() {}

func (p *protocol) Parse(pkt *stack.PacketBuffer) bool {
	_, ok := pkt.TransportHeader().Consume(header.TCPMinimumSize)
	return ok
}

// SendBufferSize is read by gVisor's stack (Stack.TCPSendBufferLimits).
func (p *protocol) SendBufferSize() tcpip.TCPSendBufferSizeRangeOption {
	return tcpip.TCPSendBufferSizeRangeOption{Min: 4096, Default: 1 << 20, Max: p.opts.SendBufferMax}
}
