//go:build linux

package linuxpeer

import (
	"sync"

	"gvisor.dev/gvisor/pkg/tcpip/header"

	"github.com/netramp/netramp/nic/tap"
	"github.com/netramp/netramp/nic/wire"
)

// bridge carries IP packets between a kernel's TUN device and one end of the
// wire: what the kernel sends enters the wire as that end's frames
// (Endpoint.WriteFrame), what the wire delivers to that end is written to
// the device (a wire.FrameSink). It copies bytes and nothing else: the path
// is the wire's.
type bridge struct {
	dev *tap.Device
	ep  *wire.Endpoint
	mu  sync.Mutex // serialises writes to the device
	wg  sync.WaitGroup
}

// attach makes b the sink of ep and starts reading the device.
func attach(dev *tap.Device, ep *wire.Endpoint) *bridge {
	b := &bridge{dev: dev, ep: ep}
	ep.AttachSink(b)
	b.wg.Add(1)
	go b.read()
	return b
}

// DeliverFrame implements wire.FrameSink. A real-time wire calls it from
// the endpoint's input goroutine, never from its releasing thread: the write
// runs the kernel's receive path inline. A write the device refuses is a
// drop, as on a link; the kernel's TCP recovers from it like from a loss.
func (b *bridge) DeliverFrame(frame []byte) {
	b.mu.Lock()
	_, _ = b.dev.Write(frame)
	b.mu.Unlock()
}

// read moves every IPv4 packet the kernel sends into the wire until the
// device is closed. IPv6 is off in the namespaces; anything else is not the
// test's traffic. Frames the wire refuses (over the MTU) are counted there.
func (b *bridge) read() {
	defer b.wg.Done()
	buf := make([]byte, 65536)
	for {
		n, err := b.dev.Read(buf)
		if err != nil {
			return
		}
		if n < header.IPv4MinimumSize || header.IPVersion(buf[:n]) != header.IPv4Version {
			continue
		}
		_ = b.ep.WriteFrame(buf[:n])
	}
}

// close detaches the bridge and closes the device, and returns once the
// reader has stopped.
func (b *bridge) close() {
	b.ep.AttachSink(nil)
	b.dev.Close()
	b.wg.Wait()
}
