package bench

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// IsTerminal reports whether f is a character device (a terminal), where a
// progress line that rewrites itself is welcome; pipes and files get none.
func IsTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progress rewrites one status line (row, arm, connection, elapsed) on a
// terminal; with no writer it does nothing.
type progress struct {
	w           io.Writer
	rows, conns int
	start       time.Time
	mu          sync.Mutex
	r, c        int
	arm, tb     string
	done        chan struct{}
	exited      chan struct{}
	once        sync.Once
}

func newProgress(w io.Writer, rows, conns int, start time.Time) *progress {
	p := &progress{w: w, rows: rows, conns: conns, start: start, done: make(chan struct{}), exited: make(chan struct{})}
	if w == nil {
		close(p.exited)
		return p
	}
	go func() {
		defer close(p.exited)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.done:
				fmt.Fprint(p.w, "\r\033[K")
				return
			case <-t.C:
				p.draw()
			}
		}
	}()
	return p
}

func (p *progress) draw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.arm == "" {
		return
	}
	el := time.Since(p.start).Round(time.Second)
	fmt.Fprintf(p.w, "\r\033[Krow %d/%d  %s (%s time)  connection %d/%d  elapsed %s", p.r+1, p.rows, p.arm, p.tb, p.c+1, p.conns, el)
}

func (p *progress) row(i int, arm, tb string) {
	p.mu.Lock()
	p.r, p.arm, p.tb, p.c = i, arm, tb, 0
	p.mu.Unlock()
}

func (p *progress) conn(c int) {
	p.mu.Lock()
	p.c = c
	p.mu.Unlock()
}

func (p *progress) stop() {
	p.once.Do(func() { close(p.done) })
	<-p.exited
}
