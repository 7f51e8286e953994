package i219_test

import (
	"errors"
	"testing"
	"time"

	"github.com/netramp/netramp/counters"
	"github.com/netramp/netramp/nic/i219"
	"github.com/netramp/netramp/nic/i219/fake"
)

func open(t *testing.T, opt fake.Options, cfg i219.Config) (*fake.Device, *i219.Endpoint) {
	t.Helper()
	dev := fake.New(opt)
	cfg.ManualPoll = true
	ep, err := i219.Open(dev.Platform(), cfg)
	if err != nil {
		t.Fatalf("Open: %v (violations %v)", err, dev.Violations)
	}
	t.Cleanup(ep.Close)
	if len(dev.Violations) > 0 {
		t.Fatalf("the card saw rule breaks: %v", dev.Violations)
	}
	return dev, ep
}

func TestOpenBringsUpEveryVariant(t *testing.T) {
	for _, id := range []uint16{0x10D3, 0x15B8, 0x15BC, 0x0D4F, 0x1A1F, 0x550B, 0x57A1} {
		dev, ep := open(t, fake.Options{DeviceID: id}, i219.Config{})
		if !ep.LinkUp() {
			t.Errorf("%04x: link not up after autonegotiation", id)
		}
		if got := string(ep.LinkAddress()); got != "\x02\x00\x00\x00\x02\x19" {
			t.Errorf("%04x: MAC %x", id, got)
		}
		if dev.Peek(fake.TCTL)&2 == 0 || dev.Peek(fake.RCTL)&2 == 0 {
			t.Errorf("%04x: RX/TX not enabled", id)
		}
	}
}

func TestUnknownDeviceRefused(t *testing.T) {
	dev := fake.New(fake.Options{DeviceID: 0x100E}) // 82540EM: e1000, not e1000e
	_, err := i219.Open(dev.Platform(), i219.Config{ManualPoll: true})
	if !errors.Is(err, i219.ErrUnsupportedDevice) {
		t.Fatalf("Open(8086:100e) = %v, want ErrUnsupportedDevice", err)
	}
}

func TestMACFromEEPROMOn82574WhenRAL0IsEmpty(t *testing.T) {
	mac := [6]byte{0x52, 0x54, 0x00, 0x12, 0x34, 0x56}
	dev, ep := open(t, fake.Options{DeviceID: 0x10D3, MAC: mac, MACOnlyInEEPROM: true}, i219.Config{})
	if got := string(ep.LinkAddress()); got != string(mac[:]) {
		t.Fatalf("MAC %x, want %x", got, mac)
	}
	// The address is programmed into the receive filter after reset.
	if dev.Peek(fake.RAH0)>>31 == 0 || dev.Peek(fake.RAL0) != 0x12005452 {
		t.Fatalf("RAL0 %#x RAH0 %#x", dev.Peek(fake.RAL0), dev.Peek(fake.RAH0))
	}
}

func TestNoMACRefused(t *testing.T) {
	dev := fake.New(fake.Options{DeviceID: 0x15B8, MACOnlyInEEPROM: true})
	if _, err := i219.Open(dev.Platform(), i219.Config{ManualPoll: true}); err == nil {
		t.Fatal("Open succeeded on an I219 with no MAC in RAL0/RAH0")
	}
}

func TestCounterClashIsAnErrorNotAPanic(t *testing.T) {
	r := counters.NewRegistry()
	r.MustRegister("nic.tx.drops", "something else entirely")
	dev := fake.New(fake.Options{})
	if _, err := i219.Open(dev.Platform(), i219.Config{ManualPoll: true, Counters: r}); !errors.Is(err, i219.ErrConfig) {
		t.Fatalf("Open = %v, want ErrConfig", err)
	}
	// Two cards may share one registry: same names, same docs.
	shared := counters.NewRegistry()
	open(t, fake.Options{}, i219.Config{Counters: shared})
	open(t, fake.Options{}, i219.Config{Counters: shared})
}

func TestDeadCardRefused(t *testing.T) {
	dev := fake.New(fake.Options{Dead: true})
	if _, err := i219.Open(dev.Platform(), i219.Config{ManualPoll: true}); !errors.Is(err, i219.ErrNotResponding) {
		t.Fatalf("Open = %v, want ErrNotResponding", err)
	}
}

func TestWaitLinkSeesAutonegotiationFinish(t *testing.T) {
	dev, ep := open(t, fake.Options{LinkDown: true}, i219.Config{})
	if ep.LinkUp() || ep.WaitLink(50*time.Millisecond) {
		t.Fatal("link up without a cable")
	}
	dev.SetCable(true)
	if !ep.WaitLink(time.Second) || !ep.LinkUp() {
		t.Fatal("WaitLink/LinkUp missed the link coming up")
	}
	if dev.Config16(fake.CfgCommand)&(1<<2) == 0 {
		t.Fatal("bus mastering off on a working card")
	}
}

func TestFailedOpenLeavesMasteringOff(t *testing.T) {
	dev := fake.New(fake.Options{MEHoldsSWFlag: 1 << 30})
	if _, err := i219.Open(dev.Platform(), i219.Config{ManualPoll: true}); err == nil {
		t.Fatal("Open succeeded")
	}
	if dev.Config16(fake.CfgCommand)&(1<<2) != 0 {
		t.Fatal("bus mastering left on after a failed Open")
	}
}

func TestEveryListedDeviceIdentifies(t *testing.T) {
	ids := i219.SupportedDevices()
	if len(ids) < 40 {
		t.Fatalf("only %d device IDs", len(ids))
	}
	for _, id := range ids {
		v, err := i219.Identify(0x8086, id)
		if err != nil || (id == 0x10D3) != (v == i219.Variant82574) || (id != 0x10D3 && !v.IsPCH()) {
			t.Errorf("%04x: %v %v", id, v, err)
		}
	}
	if _, err := i219.Identify(0x10EC, 0x15B8); !errors.Is(err, i219.ErrUnsupportedDevice) {
		t.Error("another vendor's device accepted")
	}
}
