package bench

// Issue 4's memory target: the exactly broker stays below 512 MiB resident
// while it stores 4 GiB (kfake keeps everything in RAM). Heavy, so it runs
// only when asked:
//
//	EXACTLY_BENCH_RSS=1 go test -run TestServerResidentMemory -v -timeout 60m ./bench/
//
// EXACTLY_BENCH_RSS_MB sets the volume stored in exactly (default 4096) and
// EXACTLY_BENCH_RSS_KFAKE_MB the volume stored in kfake (default 4096).

import (
	"context"
	"os"
	"testing"
	"time"
)

// residentLimit is issue 4's bound on the broker's resident memory.
const residentLimit = 512 << 20

func TestServerResidentMemory(t *testing.T) {
	if os.Getenv("EXACTLY_BENCH_RSS") != "1" {
		t.Skip("stores gigabytes: set EXACTLY_BENCH_RSS=1 to run it")
	}
	exactlyMiB, err := megabytesFromEnv("EXACTLY_BENCH_RSS_MB", 4096)
	if err != nil {
		t.Fatal(err)
	}
	kfakeMiB, err := megabytesFromEnv("EXACTLY_BENCH_RSS_KFAKE_MB", 4096)
	if err != nil {
		t.Fatal(err)
	}
	exactlyPeak := storeAndMeasure(t, serverExactly, exactlyMiB)
	storeAndMeasure(t, serverKfake, kfakeMiB)
	if exactlyPeak >= residentLimit {
		t.Errorf("exactly broker peak resident memory %d MiB storing %d MiB; want below %d MiB",
			exactlyPeak>>20, exactlyMiB, residentLimit>>20)
	}
}

// storeAndMeasure produces volumeMiB of 1 KiB records into a fresh server,
// logs its resident memory after the produce and after one full consume,
// and returns its peak resident memory.
func storeAndMeasure(t *testing.T, kind string, volumeMiB int) int64 {
	t.Helper()
	server, err := startTarget(kind, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := server.close(); err != nil {
			t.Error(err)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	records := volumeMiB * 1024 * 1024 / recordBytes
	start := time.Now()
	if err := server.produce(ctx, records); err != nil {
		t.Fatal(err)
	}
	produced := time.Since(start)
	resident, peak, err := server.server.memory()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s stores %d MiB (produced in %v): VmRSS %d MiB, VmHWM %d MiB",
		kind, volumeMiB, produced.Round(time.Millisecond), resident>>20, peak>>20)
	if err := server.consumeAll(ctx, records); err != nil {
		t.Fatal(err)
	}
	resident, peak, err = server.server.memory()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s after consuming all %d MiB: VmRSS %d MiB, VmHWM %d MiB", kind, volumeMiB, resident>>20, peak>>20)
	return peak
}
