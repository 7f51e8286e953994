// Command mutate applies the marker-anchored mutations of a negative
// control (ci/controls/*.patch) to a scratch copy of the repository, so a
// control names its control point instead of quoting line numbers and
// context that any refactor moves.
//
// A mutation is a block in the control's header:
//
//	Mutate: tcp/timer.go control:persist-give-up
//	-	if e.persistGiveUp(now) {
//	+	if false && e.persistGiveUp(now) {
//
// The file must hold exactly one line with the marker comment
// "// control:persist-give-up" (on the line to change or above it). The "-"
// lines must follow, consecutively, within the marker's next 30 lines
// (compared without surrounding blanks, so re-indentation does not matter);
// they are replaced by the "+" lines, re-indented like the first line they
// replace. No "-" lines inserts the "+" lines after the marker line.
//
// Usage: mutate CONTROL DIR. It exits non-zero, saying why, when a marker
// or the quoted text is missing, so a stale control reads as broken.
package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// reach is how many lines after its marker a mutation may start.
const reach = 30

type mutation struct {
	file, marker string
	old, new     []string
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: mutate CONTROL DIR")
		os.Exit(2)
	}
	ms, err := parse(os.Args[1])
	if err == nil {
		for _, m := range ms {
			if err = apply(os.Args[2], m); err != nil {
				break
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutate:", err)
		os.Exit(1)
	}
}

// parse reads the Mutate blocks of a control, up to its first diff.
func parse(path string) ([]mutation, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ms []mutation
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "diff --git ") {
			break
		}
		if rest, ok := strings.CutPrefix(line, "Mutate:"); ok {
			fields := strings.Fields(rest)
			if len(fields) != 2 || !strings.HasPrefix(fields[1], "control:") {
				return nil, fmt.Errorf("%q: want \"Mutate: FILE control:NAME\"", line)
			}
			ms = append(ms, mutation{file: fields[0], marker: "// " + fields[1]})
			continue
		}
		if len(ms) == 0 || line == "" {
			continue
		}
		m := &ms[len(ms)-1]
		switch line[0] {
		case '-':
			if len(m.new) > 0 {
				return nil, fmt.Errorf("%s %s: a \"-\" line after a \"+\" line", m.file, m.marker)
			}
			m.old = append(m.old, line[1:])
		case '+':
			m.new = append(m.new, line[1:])
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("%s: no Mutate block", path)
	}
	return ms, nil
}

func apply(dir string, m mutation) error {
	path := filepath.Join(dir, m.file)
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	lines := strings.Split(string(b), "\n")
	at := -1
	for i, l := range lines {
		if hasMarker(l, m.marker) {
			if at >= 0 {
				return fmt.Errorf("%s: marker %q on lines %d and %d", m.file, m.marker, at+1, i+1)
			}
			at = i
		}
	}
	if at < 0 {
		return fmt.Errorf("%s: no marker %q", m.file, m.marker)
	}
	start, end := at+1, at+1
	if len(m.old) > 0 {
		start = find(lines, at, m.marker, m.old)
		if start < 0 {
			return fmt.Errorf("%s: the text after marker %q is not %q", m.file, m.marker, m.old)
		}
		end = start + len(m.old)
	}
	indent := leading(lines[min(start, len(lines)-1)])
	base := ""
	if len(m.old) > 0 {
		base = leading(m.old[0])
	}
	repl := make([]string, 0, len(m.new))
	for _, l := range m.new {
		repl = append(repl, indent+strings.TrimPrefix(l, base))
	}
	out := append(append(append([]string{}, lines[:start]...), repl...), lines[end:]...)
	return os.WriteFile(path, []byte(strings.Join(out, "\n")), 0o644)
}

// hasMarker reports a marker comment that ends the line, so control:a does
// not also match control:ab.
func hasMarker(line, marker string) bool {
	i := strings.Index(line, marker)
	return i >= 0 && strings.TrimSpace(line[i+len(marker):]) == ""
}

// find returns the first line, from the marker's own line to reach lines
// after it, where old matches consecutive lines without their blanks.
func find(lines []string, at int, marker string, old []string) int {
	for s := at; s <= at+reach && s+len(old) <= len(lines); s++ {
		ok := true
		for k, o := range old {
			l := lines[s+k]
			if s+k == at {
				l = l[:strings.Index(l, marker)]
			}
			if strings.TrimSpace(l) != strings.TrimSpace(o) {
				ok = false
				break
			}
		}
		if ok {
			return s
		}
	}
	return -1
}

func leading(s string) string { return s[:len(s)-len(strings.TrimLeft(s, " \t"))] }
