// Package tap is a gVisor link endpoint over a Linux TAP (or TUN) device, so
// the real Linux kernel can be the peer of a netramp stack, and the raw
// device access that the Linux peer's path emulator uses.
//
// With the virtio-net header (IFF_VNET_HDR) and TUNSETOFFLOAD the kernel may
// hand over one large TCP segment (GSO) per read instead of many MSS-sized
// frames; the endpoint splits such a segment into wire-size frames before the
// stack sees it, so the stack's ACK clock is what a real link would give.
package tap
