package bench

import (
	"strings"

	"github.com/netramp/netramp/metal/osbench"
	"github.com/netramp/netramp/nic/wire"
)

// lineRate is the goodput, in MB/s, that preset's bottleneck carries in the
// payload's direction at full-sized segments: its rate, each frame an
// MTU-sized IP packet with 40 bytes of IPv4 and TCP headers and no options,
// plus wire.EthernetOverhead. It is the most any TCP can reach there (with
// timestamps, 12 bytes fewer a segment, 0.82% less at MTU 1500), so a
// ceiling drawn from it never leans towards a tie. 0 for an unknown preset
// or an unlimited direction.
func lineRate(preset string, dir osbench.Direction) float64 {
	cfg, err := wire.Preset(preset)
	if err != nil {
		return 0
	}
	d := cfg.AtoB // the source, which sends an upload, is the wire's A end
	if dir == osbench.Download {
		d = cfg.BtoA
	}
	mtu := float64(cfg.MTU)
	if mtu == 0 {
		mtu = wire.DefaultMTU
	}
	if d.RateBps <= 0 {
		return 0
	}
	return float64(d.RateBps) / 8 * (mtu - 40) / (mtu + wire.EthernetOverhead) / 1e6
}

// onPreset reports whether a row's path is the preset's wire (a boot or
// loopback arm runs on no emulated path, so no line rate is its).
func onPreset(path, preset string) bool {
	rest, ok := strings.CutPrefix(path, "wire preset "+preset)
	return ok && (rest == "" || rest[0] == ' ')
}
