//go:build linux

package wire

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// releaserNice is the releasing thread's nice value where SCHED_FIFO is
// refused.
const releaserNice = -10

// setupReleaser tunes the calling (locked) thread for punctual wake-ups: 1 ns
// timer slack, and SCHED_FIFO priority 1 where allowed (root), so a frame
// due preempts every ordinary thread; the kernel's RT throttling still
// leaves others 5% of each second. It reports whether SCHED_FIFO took.
func setupReleaser() bool {
	unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: 1 /* SCHED_FIFO */, Priority: 1}
	if unix.SchedSetAttr(0, &attr, 0) == nil {
		return true
	}
	unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), releaserNice)
	return false
}

// preciseSleep sleeps d (at most rtNapMax) without giving up the P: getting
// one back after a syscall may wait behind other goroutines.
func preciseSleep(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	unix.RawSyscall(unix.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0)
}
