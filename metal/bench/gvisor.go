package bench

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"runtime/debug"

	"gvisor.dev/gvisor/pkg/tcpip"
	gtcp "gvisor.dev/gvisor/pkg/tcpip/transport/tcp"

	"github.com/netramp/netramp/metal/report"
	"github.com/netramp/netramp/nic/wire"
	"github.com/netramp/netramp/stack"
)

// Addresses of the two stacks on a bench wire: the source is side A, the
// sink side B (198.18.0.0/15 is the benchmarking range, RFC 2544).
var (
	sourcePrefix = netip.MustParsePrefix("198.18.0.1/24")
	sinkPrefix   = netip.MustParsePrefix("198.18.0.2/24")
	sinkAddr     = netip.AddrPortFrom(sinkPrefix.Addr(), 5201)
)

// gvisorArm is gVisor's own TCP on both ends of a wire in real time, on the
// wire's releasing thread like every real-time arm: its TCP hands segments
// to processor goroutines, so virtual time cannot drive it.
type gvisorArm struct{}

func newGVisorArm() Arm { return gvisorArm{} }

func (gvisorArm) Unavailable() string { return "" }
func (gvisorArm) Timebase() string    { return Real }
func (gvisorArm) PathName(preset string) string {
	return "wire preset " + preset + " (real time on its releasing thread)"
}
func (gvisorArm) Describe() map[string]string {
	return map[string]string{"tcp": "gVisor netstack tcp: cubic, SACK, receive-buffer moderation, default buffer limits"}
}

func (gvisorArm) RunRow(ctx context.Context, spec RowSpec) ([]report.Conn, error) {
	cfg, err := wire.Preset(spec.Preset)
	if err != nil {
		return nil, err
	}
	cfg.Seed = spec.Seed
	defer debug.SetGCPercent(debug.SetGCPercent(rowGCPercent)) // see realArm.RunRow
	w, err := wire.NewRealTime(cfg)
	if err != nil {
		return nil, err
	}
	defer w.Close()
	src, err := stack.New(stack.Options{GVisorTCP: true, NICs: []stack.NIC{{Link: w.A(), Addr: sourcePrefix}}})
	if err != nil {
		return nil, err
	}
	defer src.Close()
	dst, err := stack.New(stack.Options{GVisorTCP: true, NICs: []stack.NIC{{Link: w.B(), Addr: sinkPrefix}}})
	if err != nil {
		return nil, err
	}
	defer dst.Close()
	for _, s := range []*stack.Stack{src, dst} {
		cc := tcpip.CongestionControlOption("cubic") // gVisor's default is reno; the kernel's peer here would be cubic
		if err := s.Gvisor().SetTransportProtocolOption(gtcp.ProtocolNumber, &cc); err != nil {
			return nil, fmt.Errorf("gVisor: setting cubic: %s", err)
		}
	}
	counters := func() map[string]uint64 {
		m := map[string]uint64{}
		for _, s := range []*stack.Stack{src, dst} {
			st := s.Gvisor().Stats().TCP
			m["tcp.rto"] += st.Timeouts.Value()
			m["tcp.recoveries"] += st.FastRecovery.Value() + st.SACKRecovery.Value()
			m["tcp.loss-probes"] += st.TLPRecovery.Value()
			m["gvisor.tcp.retransmitted.segments"] += st.Retransmits.Value()
		}
		return m
	}
	conns, err := runRealRow(ctx, spec,
		func() (net.Listener, error) { return dst.Listen(sinkAddr) },
		func(ctx context.Context, _ string) (net.Conn, error) {
			c, err := src.Dial(ctx, sinkAddr)
			if err != nil {
				return nil, fmt.Errorf("gVisor dial: %w", err)
			}
			return c, nil
		}, counters)
	spec.reportLate(w)
	return conns, err
}
