package bench

// What scraping the broker's /metrics costs (issue 19: under 1 % of
// produce throughput): acks=all produce of 1 KiB records to one broker, in
// three slots taking turns in rounds — no scrape, no scrape again (the A/A
// pair: the noise floor), and a scrape of the broker's /metrics every
// second (the first at the slot's start, so a short round overstates the
// cost). A scrape is what the loadgen does: GET, then parse the text
// format. Reported: each slot's records/s (median of the rounds) and the
// medians of the per-round ratios scrape/none and A/A, with the 95 %
// bootstrap interval of the scrape ratio in the log; and, for a broker it
// started, the broker's CPU time per scrape and that time once a second as
// a share of the CPU time the produce load costs the broker
// (scrape-cpu-%), which the machine's noise blurs far less than the
// throughput ratio.
//
// The broker is `exactly broker --metrics-listen` in a subprocess, built
// from this checkout (or EXACTLY_BENCH_EXACTLY=/path/to/exactly), or an
// already running one: EXACTLY_BENCH_BROKER=host:port with
// EXACTLY_BENCH_METRICS=http://host:port/metrics. Rounds should last
// several seconds each (10 rounds; -benchtime 3000000x moves 300 000
// records per slot and round):
//
//	go test ./bench/ -run '^$' -bench MetricsScrape -benchtime 3000000x

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/internal/testutil"
	"github.com/exactly-eos/exactly/loadgen/brokerscrape"
	"github.com/exactly-eos/exactly/loadgen/stats"
)

const (
	scrapeBenchRounds     = 10
	scrapeBenchPartitions = 6
	scrapeInterval        = time.Second
)

// scrapeSlot is one side of the comparison.
type scrapeSlot struct {
	name    string
	topic   string
	client  *kgo.Client
	scraper *brokerscrape.Scraper // nil: no scrape
	rates   []float64
	scrapes int
}

// round produces count records over the partitions, scraping every
// scrapeInterval meanwhile when the slot scrapes, and records the rate.
func (s *scrapeSlot) round(ctx context.Context, value []byte, count int) error {
	stop, done := make(chan struct{}), make(chan error, 1)
	go func() { done <- s.scrapeUntil(ctx, stop) }()
	start := time.Now()
	var firstErr error
	var mu sync.Mutex
	for i := range count {
		record := &kgo.Record{Topic: s.topic, Partition: int32(i % scrapeBenchPartitions), Value: value}
		s.client.Produce(ctx, record, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				firstErr = errors.Join(firstErr, err)
				mu.Unlock()
			}
		})
	}
	flushErr := s.client.Flush(ctx)
	s.rates = append(s.rates, float64(count)/time.Since(start).Seconds())
	close(stop)
	scrapeErr := <-done
	mu.Lock()
	defer mu.Unlock()
	if err := errors.Join(flushErr, firstErr, scrapeErr); err != nil {
		return fmt.Errorf("%s: %w", s.name, err)
	}
	return nil
}

// scrapeUntil scrapes at once and then every scrapeInterval until stop.
func (s *scrapeSlot) scrapeUntil(ctx context.Context, stop <-chan struct{}) error {
	if s.scraper == nil {
		return nil
	}
	ticker := time.NewTicker(scrapeInterval)
	defer ticker.Stop()
	for {
		if _, err := s.scraper.Scrape(ctx); err != nil {
			return err
		}
		s.scrapes++
		select {
		case <-stop:
			return nil
		case <-ticker.C:
		}
	}
}

// metricsBroker starts (or names) the broker serving /metrics and
// returns its client address, metrics URL and process id (0 for a broker
// named by the environment, whose CPU time is not read).
func metricsBroker(b *testing.B) (bootstrap, url string, pid int) {
	b.Helper()
	if bootstrap, url = os.Getenv("EXACTLY_BENCH_BROKER"), os.Getenv("EXACTLY_BENCH_METRICS"); bootstrap != "" && url != "" {
		return bootstrap, url, 0
	}
	binary := os.Getenv("EXACTLY_BENCH_EXACTLY")
	if binary == "" {
		binary = filepath.Join(b.TempDir(), "exactly")
		build := exec.Command("go", "build", "-o", binary, "github.com/exactly-eos/exactly/cmd/exactly")
		if output, err := build.CombinedOutput(); err != nil {
			b.Fatalf("build exactly: %v\n%s", err, output)
		}
	}
	bootstrap, metricsAddr := testutil.FreeAddr(b), testutil.FreeAddr(b)
	url = "http://" + metricsAddr + "/metrics"
	command := exec.Command(binary, "broker", "--listen", bootstrap, "--data-dir", b.TempDir(), "--metrics-listen", metricsAddr)
	output := &lockedBuffer{}
	command.Stdout, command.Stderr = output, output
	if err := command.Start(); err != nil {
		b.Fatalf("start broker: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- command.Wait() }()
	b.Cleanup(func() {
		_ = command.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = command.Process.Kill()
			<-exited
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case err := <-exited:
			exited <- err // for the cleanup
			b.Skipf("the broker exited (%v) — does this build's `exactly broker` have --metrics-listen (issue 19's broker metrics)?\n%s", err, output.String())
		default:
		}
		if response, err := http.Get(url); err == nil {
			response.Body.Close()
			if response.StatusCode == http.StatusOK {
				return bootstrap, url, command.Process.Pid
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("broker's %s did not answer within 30 s\n%s", url, output.String())
		}
		time.Sleep(100 * time.Millisecond) // polling the subprocess's readiness, bounded by deadline
	}
}

// createScrapeTopic creates topic with scrapeBenchPartitions partitions.
func createScrapeTopic(ctx context.Context, client *kgo.Client, topic string) error {
	request := kmsg.NewPtrCreateTopicsRequest()
	requestTopic := kmsg.NewCreateTopicsRequestTopic()
	requestTopic.Topic, requestTopic.NumPartitions, requestTopic.ReplicationFactor = topic, scrapeBenchPartitions, 1
	request.Topics = append(request.Topics, requestTopic)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	response, err := request.RequestWith(ctx, client)
	if err == nil {
		err = kerr.ErrorForCode(response.Topics[0].ErrorCode)
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	return nil
}

// cpuScrapes is how many back-to-back scrapes measure one scrape's CPU
// time (/proc counts in 10 ms ticks).
const cpuScrapes = 200

// brokerCPUPerScrape is the broker's CPU seconds per scrape of url, over
// cpuScrapes scrapes of an idle broker (0 without a pid).
func brokerCPUPerScrape(ctx context.Context, b *testing.B, pid int, url string) float64 {
	b.Helper()
	if pid == 0 {
		return 0
	}
	scraper := brokerscrape.New(url, 5*time.Second)
	before := brokerCPU(b, pid)
	for range cpuScrapes {
		if _, err := scraper.Scrape(ctx); err != nil {
			b.Fatal(err)
		}
	}
	return (brokerCPU(b, pid) - before) / cpuScrapes
}

// brokerCPU is the broker process's CPU seconds so far (0 without a pid).
func brokerCPU(b *testing.B, pid int) float64 {
	b.Helper()
	if pid == 0 {
		return 0
	}
	seconds, err := processCPUSeconds(pid)
	if err != nil {
		b.Fatal(err)
	}
	return seconds
}

// lockedBuffer collects a subprocess's output for error messages.
type lockedBuffer struct {
	mu   sync.Mutex
	data []byte
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.data = append(l.data, p...)
	return len(p), nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.data)
}

func BenchmarkMetricsScrape(b *testing.B) {
	ctx := context.Background()
	bootstrap, url, pid := metricsBroker(b)
	var slots []*scrapeSlot
	for i, name := range []string{"none", "none (A/A)", "scrape 1s"} {
		topic := fmt.Sprintf("scrape-bench-%d-%d", i, time.Now().UnixNano())
		client, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()))
		if err != nil {
			b.Fatal(err)
		}
		defer client.Close()
		if err := createScrapeTopic(ctx, client, topic); err != nil {
			b.Fatal(err)
		}
		slot := &scrapeSlot{name: name, topic: topic, client: client}
		if name == "scrape 1s" {
			slot.scraper = brokerscrape.New(url, 5*time.Second)
		}
		slots = append(slots, slot)
	}
	value := make([]byte, 1024)
	perRound := max(1, b.N/scrapeBenchRounds)
	for _, slot := range slots { // warm up: metadata, connections, producer ids
		if err := slot.round(ctx, value, min(perRound, 1000)); err != nil {
			b.Fatal(err)
		}
		slot.rates, slot.scrapes = nil, 0
	}
	perScrape := brokerCPUPerScrape(ctx, b, pid, url)
	runtime.GC()
	b.ResetTimer()
	var loadCPU, loadSeconds float64 // the broker's, over the no-scrape slots
	for round := range scrapeBenchRounds {
		for i := range slots {
			// The order rotates by one per round, so no slot always
			// follows another.
			slot := slots[(i+round)%len(slots)]
			cpuBefore, start := brokerCPU(b, pid), time.Now()
			if err := slot.round(ctx, value, perRound); err != nil {
				b.Fatal(err)
			}
			if slot.scraper == nil {
				loadCPU += brokerCPU(b, pid) - cpuBefore
				loadSeconds += time.Since(start).Seconds()
			}
		}
	}
	b.StopTimer()
	none, aa, scraped := slots[0], slots[1], slots[2]
	scrapeRatio := stats.BootstrapMedian(stats.Ratios(scraped.rates, none.rates), 2000, 0.95, 19)
	aaRatio := stats.BootstrapMedian(stats.Ratios(aa.rates, none.rates), 2000, 0.95, 19)
	b.ReportMetric(stats.Median(none.rates), "none-rec/s")
	b.ReportMetric(stats.Median(scraped.rates), "scrape-rec/s")
	b.ReportMetric(scrapeRatio.Median, "scrape/none")
	b.ReportMetric(aaRatio.Median, "aa/none")
	b.ReportMetric(float64(scraped.scrapes)/scrapeBenchRounds, "scrapes/round")
	if pid != 0 && loadCPU > 0 {
		// One scrape a second costs perScrape of the broker's CPU
		// seconds each second, against loadCPU/loadSeconds of CPU the
		// produce load uses each second: the share of the broker's work
		// that scraping adds, a figure the machine's noise does not blur
		// as it blurs the throughput ratio.
		b.ReportMetric(perScrape*1000, "broker-cpu-ms/scrape")
		b.ReportMetric(100*perScrape/scrapeInterval.Seconds()/(loadCPU/loadSeconds), "scrape-cpu-%")
	}
	b.Logf("scrape/none %.4f [%.4f, %.4f] (95%% interval over %d rounds); A/A %.4f [%.4f, %.4f]; %d scrapes",
		scrapeRatio.Median, scrapeRatio.Low, scrapeRatio.High, scrapeBenchRounds, aaRatio.Median, aaRatio.Low, aaRatio.High, scraped.scrapes)
}
