// Command i219host is the host's half of ci/qemu/run.sh: the TCP sink the
// guest reaches through slirp, a UDP flooder for the RX-ring check, a client
// for QEMU's monitor socket, and a pcap reader that checks what crossed the
// emulated card.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"net"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/netramp/netramp/metal/cmd/internal/xfer"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "sink":
		err = sink(os.Args[2:])
	case "flood":
		err = flood(os.Args[2:])
	case "mon":
		err = monitor(os.Args[2:])
	case "pcap":
		err = pcapCheck(os.Args[2:])
	case "freeport":
		err = freePort()
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "i219host %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: i219host sink|flood|mon|pcap|freeport [flags]")
	os.Exit(2)
}

// sink listens on loopback, writes its port to -portfile, and serves xfer
// requests until killed, logging one line per transfer.
func sink(args []string) error {
	fs := flag.NewFlagSet("sink", flag.ExitOnError)
	portFile := fs.String("portfile", "", "write the listening port here")
	fs.Parse(args)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	if *portFile != "" {
		if err := os.WriteFile(*portFile+".tmp", []byte(fmt.Sprintf("%d\n", port)), 0o644); err != nil {
			return err
		}
		if err := os.Rename(*portFile+".tmp", *portFile); err != nil {
			return err
		}
	}
	fmt.Printf("sink: listening on 127.0.0.1:%d\n", port)
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			start := time.Now()
			req, sum, err := xfer.Serve(c)
			el := time.Since(start)
			if err != nil {
				fmt.Printf("sink: %s from %s: error after %v: %v\n", strings.TrimSpace(req.String()), c.RemoteAddr(), el, err)
				return
			}
			fmt.Printf("sink: %s done in %v (%.1f MB/s) sha256 %s\n", strings.TrimSpace(req.String()), el.Round(time.Millisecond),
				float64(req.Size)/el.Seconds()/1e6, sum)
		}()
	}
}

// flood sends -n UDP datagrams of -size bytes to -addr, paced at -gap.
func flood(args []string) error {
	fs := flag.NewFlagSet("flood", flag.ExitOnError)
	addr := fs.String("addr", "", "destination host:port (a slirp hostfwd)")
	n := fs.Int("n", 2000, "datagrams")
	size := fs.Int("size", 1000, "payload bytes")
	gap := fs.Duration("gap", 0, "pause between datagrams")
	fs.Parse(args)
	c, err := net.Dial("udp4", *addr)
	if err != nil {
		return err
	}
	defer c.Close()
	buf := make([]byte, *size)
	sent := 0
	for i := 0; i < *n; i++ {
		copy(buf, fmt.Sprintf("flood %d", i))
		if _, err := c.Write(buf); err == nil {
			sent++
		}
		if *gap > 0 {
			time.Sleep(*gap)
		}
	}
	fmt.Printf("flood: sent %d of %d datagrams of %d bytes to %s\n", sent, *n, *size, *addr)
	return nil
}

// monitor sends each argument as one human-monitor command to QEMU's
// -monitor unix socket and prints the replies.
func monitor(args []string) error {
	fs := flag.NewFlagSet("mon", flag.ExitOnError)
	sock := fs.String("sock", "", "QEMU monitor unix socket")
	quietReply := fs.Bool("any", false, "accept any answer (for info commands)")
	fs.Parse(args)
	c, err := net.DialTimeout("unix", *sock, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	if _, err := readPrompt(r); err != nil {
		return err
	}
	for _, cmd := range fs.Args() {
		if _, err := fmt.Fprintf(c, "%s\n", cmd); err != nil {
			return err
		}
		out, err := readPrompt(r)
		if err != nil {
			return err
		}
		// The monitor echoes the command line; what follows is its answer,
		// empty on success.
		reply := strings.TrimSpace(ansi.ReplaceAllString(strings.ReplaceAll(out, "\r", ""), ""))
		if i := strings.Index(reply, cmd); i >= 0 {
			reply = strings.TrimSpace(reply[i+len(cmd):])
		}
		if reply != "" && !*quietReply {
			return fmt.Errorf("%s: monitor answered %q", cmd, reply)
		}
		fmt.Printf("mon: %s: ok %s\n", cmd, reply)
	}
	return nil
}

// ansi matches the terminal control sequences the monitor's line editor
// writes.
var ansi = regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]`)

// readPrompt returns the output up to the monitor's "(qemu) " prompt.
func readPrompt(r *bufio.Reader) (string, error) {
	var seen []byte
	for {
		b, err := r.ReadByte()
		if err != nil {
			return string(seen), fmt.Errorf("waiting for the monitor prompt: %w", err)
		}
		seen = append(seen, b)
		if strings.HasSuffix(string(seen), "(qemu) ") {
			return strings.TrimSuffix(string(seen), "(qemu) "), nil
		}
	}
}

func freePort() error {
	c, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		return err
	}
	port := c.LocalAddr().(*net.UDPAddr).Port
	c.Close()
	fmt.Println(port)
	return nil
}
