// Package procstat reads what the benchmarks report of their own process:
// CPU time, which a shared machine distorts less than wall time, and the
// peak resident set, which the kernel keeps and a benchmark can reset.
package procstat

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// CPUTime is the process's user + system CPU time so far.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// PeakRSS is the process's peak resident set (VmHWM) in bytes, 0 where
// /proc does not tell.
func PeakRSS() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// ResetPeakRSS sets the peak resident set to the current one, so that the
// next PeakRSS measures what came after (Linux: clear_refs 5).
func ResetPeakRSS() {
	os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}
