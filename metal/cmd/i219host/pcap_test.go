package main

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"
)

func arpFrame(op uint16, dst, src net.HardwareAddr, sha net.HardwareAddr, spa net.IP, tha net.HardwareAddr, tpa net.IP) []byte {
	f := append(append([]byte{}, dst...), src...)
	f = binary.BigEndian.AppendUint16(f, 0x0806)
	f = append(f, 0, 1, 8, 0, 6, 4)
	f = binary.BigEndian.AppendUint16(f, op)
	f = append(f, sha...)
	f = append(f, spa.To4()...)
	f = append(f, tha...)
	return append(f, tpa.To4()...)
}

func writePcap(frames ...[]byte) []byte {
	var b bytes.Buffer
	h := make([]byte, 24)
	binary.LittleEndian.PutUint32(h[0:], 0xa1b2c3d4)
	binary.LittleEndian.PutUint16(h[4:], 2)
	binary.LittleEndian.PutUint16(h[6:], 4)
	binary.LittleEndian.PutUint32(h[16:], 65535)
	binary.LittleEndian.PutUint32(h[20:], 1)
	b.Write(h)
	for _, f := range frames {
		r := make([]byte, 16)
		binary.LittleEndian.PutUint32(r[8:], uint32(len(f)))
		binary.LittleEndian.PutUint32(r[12:], uint32(len(f)))
		b.Write(r)
		b.Write(f)
	}
	return b.Bytes()
}

func TestSummaryCountsGuestARPExchangeOnly(t *testing.T) {
	guest, _ := net.ParseMAC("52:54:00:12:34:56")
	gwMAC, _ := net.ParseMAC("52:55:0a:00:02:02")
	other, _ := net.ParseMAC("52:54:00:00:00:01")
	bcast, _ := net.ParseMAC("ff:ff:ff:ff:ff:ff")
	gw, me := net.IPv4(10, 0, 2, 2), net.IPv4(10, 0, 2, 15)
	req := arpFrame(1, bcast, guest, guest, me, make(net.HardwareAddr, 6), gw)
	rep := arpFrame(2, guest, gwMAC, gwMAC, gw, guest, me)
	otherReq := arpFrame(1, bcast, other, other, me, make(net.HardwareAddr, 6), gw)

	frames, err := pcapFrames(bytes.NewReader(writePcap(req, otherReq)))
	if err != nil {
		t.Fatal(err)
	}
	s := summarize(frames, guest, gw.To4())
	if s.frames != 2 || s.arpReqFromGuest != 1 || s.arpReplyToGuest != 0 {
		t.Fatalf("request only: %+v", s)
	}
	frames, _ = pcapFrames(bytes.NewReader(writePcap(req, rep)))
	s = summarize(frames, guest, gw.To4())
	if s.arpReqFromGuest != 1 || s.arpReplyToGuest != 1 {
		t.Fatalf("request and reply: %+v", s)
	}
	if s.arpReqFrom["10.0.2.15"] != 1 || s.arpReplyTo["10.0.2.15"] != 1 || s.arpReqFrom["10.0.2.21"] != 0 {
		t.Fatalf("per address: %v %v", s.arpReqFrom, s.arpReplyTo)
	}
}

func TestPcapFramesKeepsWholeRecordsOfATruncatedFile(t *testing.T) {
	b := writePcap([]byte("0123456789abcdef"), []byte("0123456789abcdefXYZ"))
	frames, err := pcapFrames(bytes.NewReader(b[:len(b)-3]))
	if err != nil || len(frames) != 1 {
		t.Fatalf("got %d frames, %v", len(frames), err)
	}
}
