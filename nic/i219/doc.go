// Package i219 drives the Intel I219 Ethernet controller (the e1000e
// family's PCH "ich8lan" MACs, Sunrise Point and later) and the discrete
// 82574L that QEMU emulates as "e1000e", as a gVisor link endpoint.
//
// The driver reaches the card only through a Platform (BAR0 register
// access, PCI configuration space, DMA memory, an optional interrupt and
// clock), so the same code runs in a hobby OS, a unikernel, or a Linux
// process (package nic/i219/linux). Open resets and initialises the card in
// the order of Intel's shared code, with each I219 erratum applied where
// Intel applies it, and returns an Endpoint: Ethernet framing, a poll loop
// that reaps received frames in batches, a TX ring whose free descriptors
// are the link's nic.Credit, and a bounded wait (500 µs per batch) when that
// ring is full, after which frames are dropped and counted.
//
// Tests run against nic/i219/fake, a register-level model of the card.
package i219
