package i219

import (
	"errors"
	"fmt"
	"slices"
)

// VendorIntel is Intel's PCI vendor ID.
const VendorIntel = 0x8086

// ErrUnsupportedDevice reports a PCI ID this driver does not know. A card it
// has not been written for may share the class code yet differ in registers,
// so the driver refuses rather than guesses.
var ErrUnsupportedDevice = errors.New("i219: unsupported PCI device")

// Variant is a MAC family. The low register offsets differ between them:
// the PCH MACs put FEXTNVM* where the 82574L has its EEPROM interface.
type Variant int

const (
	// Variant82574 is the discrete 82574L, the card QEMU emulates as "e1000e".
	Variant82574 Variant = iota + 1
	// VariantSPT is an I219 on a Sunrise Point PCH (and Lewisburg).
	VariantSPT
	// VariantCNP is an I219 on Cannon Point and the Ice/Comet Lake PCHs.
	VariantCNP
	// VariantTGP is an I219 on Tiger Lake and later PCHs (ADP, MTP, LNP,
	// RPL, ARL, PTP, WCL): the newest I219 MACs, treated alike here.
	VariantTGP
)

func (v Variant) String() string {
	switch v {
	case Variant82574:
		return "82574L"
	case VariantSPT:
		return "I219 (SPT)"
	case VariantCNP:
		return "I219 (CNP)"
	case VariantTGP:
		return "I219 (TGP+)"
	}
	return fmt.Sprintf("Variant(%d)", int(v))
}

// IsPCH reports whether the MAC sits in a platform controller hub, with the
// ME, ULP, LANPHYPC and the FEXTNVM registers that come with it.
func (v Variant) IsPCH() bool { return v >= VariantSPT }

// deviceIDs maps Intel device IDs to their MAC family (Linux e1000e hw.h
// lists the same IDs; each I219 generation is named after its PCH).
var deviceIDs = map[uint16]Variant{
	0x10D3: Variant82574, // 82574L
	// Sunrise Point / Lewisburg (I219 LM, V, LM2, V2, LM3, LM4, V4, LM5, V5)
	0x156F: VariantSPT, 0x1570: VariantSPT, 0x15B7: VariantSPT, 0x15B8: VariantSPT,
	0x15B9: VariantSPT, 0x15D7: VariantSPT, 0x15D8: VariantSPT, 0x15E3: VariantSPT,
	0x15D6: VariantSPT,
	// Cannon Point, Ice Point, Comet Point (LM6..V12)
	0x15BD: VariantCNP, 0x15BE: VariantCNP, 0x15BB: VariantCNP, 0x15BC: VariantCNP,
	0x15DF: VariantCNP, 0x15E0: VariantCNP, 0x15E1: VariantCNP, 0x15E2: VariantCNP,
	0x0D4E: VariantCNP, 0x0D4F: VariantCNP, 0x0D4C: VariantCNP, 0x0D4D: VariantCNP,
	0x0D53: VariantCNP, 0x0D55: VariantCNP,
	// Tiger Point and later: TGP (13..15), ADP (16, 17), MTP (18, 19),
	// LNP (20, 21), RPL (22, 23), ARL (24), PTP (25), WCL (27)
	0x15FB: VariantTGP, 0x15FC: VariantTGP, 0x15F9: VariantTGP, 0x15FA: VariantTGP,
	0x15F4: VariantTGP, 0x15F5: VariantTGP, 0x1A1E: VariantTGP, 0x1A1F: VariantTGP,
	0x1A1C: VariantTGP, 0x1A1D: VariantTGP, 0x550A: VariantTGP, 0x550B: VariantTGP,
	0x550C: VariantTGP, 0x550D: VariantTGP, 0x550E: VariantTGP, 0x550F: VariantTGP,
	0x5510: VariantTGP, 0x5511: VariantTGP, 0x0DC7: VariantTGP, 0x0DC8: VariantTGP,
	0x0DC5: VariantTGP, 0x0DC6: VariantTGP, 0x57A0: VariantTGP, 0x57A1: VariantTGP,
	0x57B3: VariantTGP, 0x57B4: VariantTGP, 0x57B7: VariantTGP, 0x57B8: VariantTGP,
}

// Identify returns the MAC family of vendor:device, or an error wrapping
// ErrUnsupportedDevice.
func Identify(vendor, device uint16) (Variant, error) {
	if vendor == VendorIntel {
		if v, ok := deviceIDs[device]; ok {
			return v, nil
		}
	}
	return 0, fmt.Errorf("%w: %04x:%04x is not an I219 or an 82574L", ErrUnsupportedDevice, vendor, device)
}

// SupportedDevices returns the device IDs (vendor 0x8086) the driver accepts,
// in ascending order.
func SupportedDevices() []uint16 {
	out := make([]uint16, 0, len(deviceIDs))
	for id := range deviceIDs {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}
