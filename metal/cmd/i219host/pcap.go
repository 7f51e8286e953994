package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
)

// pcapFrames reads a classic little-endian pcap file (what QEMU's filter-dump
// writes) and returns its Ethernet frames.
func pcapFrames(r io.Reader) ([][]byte, error) {
	var gh [24]byte
	if _, err := io.ReadFull(r, gh[:]); err != nil {
		return nil, fmt.Errorf("pcap header: %w", err)
	}
	if binary.LittleEndian.Uint32(gh[0:4]) != 0xa1b2c3d4 {
		return nil, errors.New("not a little-endian microsecond pcap file")
	}
	if lt := binary.LittleEndian.Uint32(gh[20:24]); lt != 1 {
		return nil, fmt.Errorf("link type %d, want 1 (Ethernet)", lt)
	}
	var frames [][]byte
	for {
		var rh [16]byte
		if _, err := io.ReadFull(r, rh[:]); err == io.EOF {
			return frames, nil
		} else if err != nil {
			// QEMU may be killed mid-record: keep what is whole.
			return frames, nil
		}
		n := binary.LittleEndian.Uint32(rh[8:12])
		if n > 1<<16 {
			return frames, fmt.Errorf("record of %d bytes", n)
		}
		f := make([]byte, n)
		if _, err := io.ReadFull(r, f); err != nil {
			return frames, nil
		}
		frames = append(frames, f)
	}
}

// summary counts what the check needs to see: ARP between the guest and the
// gateway, and IPv4 TCP and UDP frames per direction.
type summary struct {
	frames          int
	arpReqFromGuest int // who-has gw tell guest
	arpReplyToGuest int // gw is-at, to the guest's MAC
	// per guest address: requests from it and replies to it
	arpReqFrom, arpReplyTo  map[string]int
	tcpFromGuest, tcpTo     int
	udpFromGuest, udpTo     int
	bytesFromGuest, bytesTo int
}

func summarize(frames [][]byte, guest net.HardwareAddr, gw net.IP) summary {
	s := summary{arpReqFrom: map[string]int{}, arpReplyTo: map[string]int{}}
	for _, f := range frames {
		s.frames++
		if len(f) < 14 {
			continue
		}
		from := bytes.Equal(f[6:12], guest)
		to := bytes.Equal(f[0:6], guest)
		if from {
			s.bytesFromGuest += len(f)
		}
		if to {
			s.bytesTo += len(f)
		}
		switch binary.BigEndian.Uint16(f[12:14]) {
		case 0x0806:
			a := f[14:]
			if len(a) < 28 {
				continue
			}
			op := binary.BigEndian.Uint16(a[6:8])
			if op == 1 && from && bytes.Equal(a[8:14], guest) && net.IP(a[24:28]).Equal(gw) {
				s.arpReqFromGuest++
				s.arpReqFrom[net.IP(a[14:18]).String()]++
			}
			if op == 2 && to && net.IP(a[14:18]).Equal(gw) && bytes.Equal(a[18:24], guest) {
				s.arpReplyToGuest++
				s.arpReplyTo[net.IP(a[24:28]).String()]++
			}
		case 0x0800:
			if len(f) < 34 {
				continue
			}
			switch f[23] {
			case 6:
				if from {
					s.tcpFromGuest++
				} else if to {
					s.tcpTo++
				}
			case 17:
				if from {
					s.udpFromGuest++
				} else if to {
					s.udpTo++
				}
			}
		}
	}
	return s
}

// pcapCheck prints a summary of -file and fails if a -expect condition
// (arp, tcp, udp-in; comma-separated) is not met.
func pcapCheck(args []string) error {
	fs := flag.NewFlagSet("pcap", flag.ExitOnError)
	file := fs.String("file", "", "pcap file")
	mac := fs.String("mac", "52:54:00:12:34:56", "the guest's MAC")
	gw := fs.String("gw", "10.0.2.2", "slirp's gateway")
	expect := fs.String("expect", "", "arp, arp@<guest IP>, tcp, udp-in (comma-separated)")
	fs.Parse(args)
	hw, err := net.ParseMAC(*mac)
	if err != nil {
		return err
	}
	f, err := os.Open(*file)
	if err != nil {
		return err
	}
	defer f.Close()
	frames, err := pcapFrames(f)
	if err != nil {
		return err
	}
	s := summarize(frames, hw, net.ParseIP(*gw).To4())
	fmt.Printf("pcap: %d frames; ARP who-has %s from guest %d, is-at to guest %d; TCP out %d in %d; UDP out %d in %d; bytes out %d in %d\n",
		s.frames, *gw, s.arpReqFromGuest, s.arpReplyToGuest, s.tcpFromGuest, s.tcpTo, s.udpFromGuest, s.udpTo, s.bytesFromGuest, s.bytesTo)
	var missing []string
	for _, e := range strings.Split(*expect, ",") {
		switch e {
		case "arp":
			if s.arpReqFromGuest == 0 || s.arpReplyToGuest == 0 {
				missing = append(missing, "an ARP request from the guest and the gateway's reply")
			}
		case "":
		case "tcp":
			if s.tcpFromGuest == 0 || s.tcpTo == 0 {
				missing = append(missing, "TCP both ways")
			}
		case "udp-in":
			if s.udpTo == 0 {
				missing = append(missing, "UDP to the guest")
			}
		default:
			ip, ok := strings.CutPrefix(e, "arp@")
			if !ok || net.ParseIP(ip) == nil {
				return fmt.Errorf("unknown expectation %q", e)
			}
			if s.arpReqFrom[ip] == 0 || s.arpReplyTo[ip] == 0 {
				missing = append(missing, fmt.Sprintf("ARP who-has %s tell %s and its reply (saw %d, %d)", *gw, ip, s.arpReqFrom[ip], s.arpReplyTo[ip]))
			}
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("pcap lacks %s", strings.Join(missing, "; "))
	}
	return nil
}
