package report

import (
	"bufio"
	"os"
	"runtime"
	"strings"
)

// cpuModel is the CPU's model name (/proc/cpuinfo's "model name" on
// Linux x86, "Hardware" or "Model" on some ARM kernels), or "unknown".
func cpuModel() string {
	file, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer file.Close()
	scanner := bufio.NewScanner(file)
	fallback := ""
	for scanner.Scan() {
		key, value, found := strings.Cut(scanner.Text(), ":")
		if !found {
			continue
		}
		switch strings.TrimSpace(key) {
		case "model name":
			return strings.TrimSpace(value)
		case "Hardware", "Model":
			fallback = strings.TrimSpace(value)
		}
	}
	if fallback != "" {
		return fallback
	}
	return "unknown"
}

// kernelRelease is the running kernel's name and release (Linux: from
// /proc/sys/kernel/osrelease), or the GOOS and "unknown".
func kernelRelease() string {
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		return runtime.GOOS + " " + strings.TrimSpace(string(data))
	}
	return runtime.GOOS + " unknown"
}
