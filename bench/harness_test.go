package bench

// Fast checks of the benchmark harness itself; `go test ./bench/` runs
// only these (the benchmarks and the memory test are opt-in).

import (
	"context"
	"os"
	"testing"
	"time"
)

func TestParseStatCPUSeconds(t *testing.T) {
	// A command name with spaces and parentheses, utime 250, stime 130.
	stat := "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 130 0 0 20 0 7 0 12345 1000 200"
	got, err := parseStatCPUSeconds(stat)
	if err != nil {
		t.Fatal(err)
	}
	if got != 3.8 {
		t.Fatalf("got %v CPU seconds, want 3.8", got)
	}
	if _, err := parseStatCPUSeconds("4242 (x) S 1 2"); err == nil {
		t.Fatal("a truncated stat line parsed without error")
	}
}

func TestParseStatusMemory(t *testing.T) {
	status := "Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\nThreads:\t3\n"
	resident, peak, err := parseStatusMemory(status)
	if err != nil {
		t.Fatal(err)
	}
	if resident != 1024*1024 || peak != 2048*1024 {
		t.Fatalf("resident %d, peak %d; want %d, %d", resident, peak, 1024*1024, 2048*1024)
	}
	if _, _, err := parseStatusMemory("Name:\tx\nVmRSS:\t1 kB\n"); err == nil {
		t.Fatal("a status without VmHWM parsed without error")
	}
}

// TestHarnessRoundTrip runs the benchmark path end to end at a small
// volume against each server kind that stores records.
func TestHarnessRoundTrip(t *testing.T) {
	const records = 2000
	for _, kind := range []string{serverExactly, serverKfake} {
		server, err := startTarget(kind, t.Name())
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := server.produce(ctx, records); err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if err := server.consumeAll(ctx, records); err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		cancel()
		cpu, err := server.server.cpuSeconds()
		if err != nil || cpu < 0 {
			t.Fatalf("%s: server CPU %v, %v", kind, cpu, err)
		}
		resident, peak, err := server.server.memory()
		if err != nil || resident <= 0 || peak < resident {
			t.Fatalf("%s: server memory %d resident, %d peak, %v", kind, resident, peak, err)
		}
		dataDir := server.dataDir
		if err := server.close(); err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if dataDir != "" {
			if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
				t.Fatalf("%s: data directory %s left behind (%v)", kind, dataDir, err)
			}
		}
	}
}

// roundShare is round's share of n records split over rounds interleaved
// rounds: n/rounds each, the first n%rounds rounds one more.
func roundShare(n, rounds, round int) int {
	count := n / rounds
	if round < n%rounds {
		count++
	}
	return count
}
