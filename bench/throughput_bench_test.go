package bench

// Issue 4's throughput benchmarks. Every round hosts its server in a fresh
// subprocess. Sub-benchmarks run in the order ceiling, kfake, exactly;
// later ones report their ratio to the last round of the earlier ones in
// the same run (the machines are shared and noisy, so ratios from one run
// mean more than absolute numbers). -count repeats each sub-benchmark in
// place; to interleave the servers, loop over runs with -count 1 (see
// README.md).

import (
	"context"
	"sync"
	"testing"
	"time"
)

// measurement is one sub-benchmark's last round.
type measurement struct {
	recordsPerSecond      float64
	serverCPUSecondsPerGB float64
}

var (
	resultsMu sync.Mutex                            // guards results
	results   = map[string]map[string]measurement{} // benchmark → server kind → last round
)

func recordResult(benchmark, kind string, m measurement) {
	resultsMu.Lock()
	defer resultsMu.Unlock()
	if results[benchmark] == nil {
		results[benchmark] = map[string]measurement{}
	}
	results[benchmark][kind] = m
}

func lookupResult(benchmark, kind string) (measurement, bool) {
	resultsMu.Lock()
	defer resultsMu.Unlock()
	m, ok := results[benchmark][kind]
	return m, ok
}

// runAgainst runs body as sub-benchmark "server=<kind>" of b (the
// key=value form lets `benchstat -col /server` put the servers side by
// side). Every round gets a fresh server subprocess, closed when the round
// ends, so one round's stored records never slow the next (kfake keeps
// them all in memory) and only one server runs at a time.
func runAgainst(b *testing.B, kind string, body func(*testing.B, *target)) {
	b.Run("server="+kind, func(b *testing.B) {
		b.StopTimer()
		t, err := startTarget(kind, b.Name())
		if err != nil {
			b.Fatal(err)
		}
		defer func() {
			if err := t.close(); err != nil {
				b.Error(err)
			}
		}()
		body(b, t)
	})
}

// BenchmarkProduce produces b.N records of 1 KiB (acks=all, six
// partitions, 10 000 records buffered, idempotence off) to the client's
// ceiling (kfake discarding), to kfake and to exactly.
func BenchmarkProduce(b *testing.B) {
	for _, kind := range []string{serverCeiling, serverKfake, serverExactly} {
		runAgainst(b, kind, benchmarkProduceRound)
	}
}

func benchmarkProduceRound(b *testing.B, t *target) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	timeRound(b, t, "produce", func() error { return t.produce(ctx, b.N) })
}

// timeRound times operation (which moves b.N records of 1 KiB) and reports
// it with the server's and client's CPU spent during it.
func timeRound(b *testing.B, t *target, what string, operation func() error) {
	b.SetBytes(recordBytes)
	serverBefore, err := t.server.cpuSeconds()
	if err != nil {
		b.Fatal(err)
	}
	clientBefore := selfCPUSeconds()
	b.ResetTimer()
	b.StartTimer()
	start := time.Now()
	if err := operation(); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	reportRound(b, what, t, b.N, elapsed, serverBefore, clientBefore)
}

// BenchmarkConsume times a fresh consumer reading b.N records of 1 KiB
// from the start of kfake's and exactly's topic, produced beforehand
// (untimed), so -benchtime 2097152x consumes 2 GiB.
func BenchmarkConsume(b *testing.B) {
	for _, kind := range []string{serverKfake, serverExactly} {
		runAgainst(b, kind, benchmarkConsumeRound)
	}
}

func benchmarkConsumeRound(b *testing.B, t *target) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	if err := t.produce(ctx, b.N); err != nil {
		b.Fatal(err)
	}
	timeRound(b, t, "consume", func() error { return t.consumeAll(ctx, b.N) })
}

// reportRound reports records/s, the server's and the client's CPU
// seconds per GB (10^9 bytes of record values), the server's cores in use
// and resident memory, and ratios to the servers measured earlier in this
// run.
func reportRound(b *testing.B, benchmark string, t *target, count int, elapsed time.Duration,
	serverBefore, clientBefore float64) {
	b.Helper()
	serverAfter, err := t.server.cpuSeconds()
	if err != nil {
		b.Fatal(err)
	}
	clientCPU := selfCPUSeconds() - clientBefore
	_, peak, err := t.server.memory()
	if err != nil {
		b.Fatal(err)
	}
	gigabytes := float64(count) * recordBytes / 1e9
	m := measurement{
		recordsPerSecond:      float64(count) / elapsed.Seconds(),
		serverCPUSecondsPerGB: (serverAfter - serverBefore) / gigabytes,
	}
	b.ReportMetric(m.recordsPerSecond, "records/s")
	b.ReportMetric(m.serverCPUSecondsPerGB, "server-cpu-s/GB")
	b.ReportMetric(clientCPU/gigabytes, "client-cpu-s/GB")
	b.ReportMetric((serverAfter-serverBefore)/elapsed.Seconds(), "server-cores")
	b.ReportMetric(float64(peak)/(1<<20), "server-peak-rss-MiB")
	if ceiling, ok := lookupResult(benchmark, serverCeiling); ok && t.kind != serverCeiling {
		b.ReportMetric(m.recordsPerSecond/ceiling.recordsPerSecond, "x-ceiling")
	}
	if kfake, ok := lookupResult(benchmark, serverKfake); ok && t.kind == serverExactly {
		b.ReportMetric(m.recordsPerSecond/kfake.recordsPerSecond, "x-kfake")
		if kfake.serverCPUSecondsPerGB > 0 {
			b.ReportMetric(m.serverCPUSecondsPerGB/kfake.serverCPUSecondsPerGB, "cpu-x-kfake")
		}
	}
	recordResult(benchmark, t.kind, m)
}
