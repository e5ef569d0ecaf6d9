package broker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Flood test parameters: at least floodAttempts connection attempts from
// one address, floodDialers at a time, against max.connections.per.ip =
// floodPerIP, going on until the steady client has made
// floodSteadyRoundTrips round trips (so a loaded machine, where each
// round trip is slow, still sees the client served during the flood).
const (
	floodAttempts         = 10000
	floodDialers          = 32
	floodPerIP            = 100
	floodSteadyRoundTrips = 100
)

// TestConnectionFloodFromOneIP is the hostile-client check of the
// connection limits: 10,000 connection attempts from 127.0.0.1 with
// max.connections.per.ip=100 (the first 100 are served and held open,
// every other one is closed by the broker at once) while a client on
// 127.0.0.2 produces and consumes steadily. That client must get every
// answer without an error, its produce p99 is logged (and bounded
// generously, 1 s, to stay clear of scheduling noise on a loaded
// machine), and the process's RSS and goroutine count stay bounded.
func TestConnectionFloodFromOneIP(t *testing.T) {
	if testing.Short() {
		t.Skip("connection flood: not in -short")
	}
	b := startTestBroker(t, t.TempDir(), map[string]string{"max.connections.per.ip": strconv.Itoa(floodPerIP)})
	ctx := testContext(t, 2*time.Minute)
	fromSecondIP := kgo.Dialer(func(ctx context.Context, network, host string) (net.Conn, error) {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, Timeout: 5 * time.Second}
		return d.DialContext(ctx, network, host)
	})
	producer := newTestClient(t, b, fromSecondIP, kgo.DefaultProduceTopic("steady"), kgo.AllowAutoTopicCreation())
	consumer := newTestClient(t, b, fromSecondIP, kgo.ConsumeTopics("steady"), kgo.FetchMaxWait(50*time.Millisecond))

	// Warm up: the topic exists and both clients are connected.
	if err := producer.ProduceSync(ctx, &kgo.Record{Value: []byte("warm-up")}).FirstErr(); err != nil {
		t.Fatalf("warm-up produce: %v", err)
	}
	runtime.GC()
	rssBefore, goroutinesBefore := vmRSS(t), runtime.NumGoroutine()

	steady := startSteadyClient(ctx, producer, consumer)
	peak := sampleRSS()
	flood := floodConnections(ctx, b.Addr(), func() bool { return steady.roundTrips.Load() >= floodSteadyRoundTrips })
	rssPeak := peak.stop()
	rssAfterFlood, goroutinesAfterFlood := vmRSS(t), runtime.NumGoroutine()
	// Keep the steady client going a little past the flood, then stop it
	// and check it consumed everything it produced.
	time.Sleep(200 * time.Millisecond)
	produced, latencies, steadyErr := steady.stop()
	for _, conn := range flood.held {
		conn.Close()
	}

	t.Logf("flood: %d attempts in %v: %d served and held, %d closed by the broker, %d other errors",
		flood.attempts, flood.elapsed, len(flood.held), flood.refused, flood.otherErrors)
	if flood.firstOther != nil {
		t.Logf("first other error: %v", flood.firstOther)
	}
	if flood.attempts < floodAttempts || len(flood.held) != floodPerIP || flood.refused != flood.attempts-floodPerIP || flood.otherErrors != 0 {
		t.Errorf("flood: %d attempts, %d held, %d refused, %d other errors; want at least %d, %d, %d, 0",
			flood.attempts, len(flood.held), flood.refused, flood.otherErrors, floodAttempts, floodPerIP, flood.attempts-floodPerIP)
	}
	if steadyErr != nil {
		t.Fatalf("the client on 127.0.0.2: %v", steadyErr)
	}
	if produced < floodSteadyRoundTrips {
		t.Fatalf("the client on 127.0.0.2 produced only %d records during the flood (before the test's deadline)", produced)
	}
	p50, p99, worst := percentile(latencies, 50), percentile(latencies, 99), slices.Max(latencies)
	t.Logf("client on 127.0.0.2 during the flood: %d produce round trips (each consumed back), p50 %v, p99 %v, max %v",
		produced, p50, p99, worst)
	t.Logf("RSS %d MiB before, %d MiB at its peak during, %d MiB after the flood; goroutines %d before, %d after",
		rssBefore>>20, rssPeak>>20, rssAfterFlood>>20, goroutinesBefore, goroutinesAfterFlood)
	if p99 > time.Second {
		t.Errorf("the client on 127.0.0.2 had a produce p99 of %v during the flood (bound 1 s)", p99)
	}
	if grown := max(rssPeak, rssAfterFlood) - rssBefore; grown > 200<<20 {
		t.Errorf("RSS grew by %d MiB during the flood (bound 200 MiB)", grown>>20)
	}
	// Each held connection has a reader and a writer on the broker's side;
	// a refused one must leave nothing behind.
	if limit := goroutinesBefore + 2*floodPerIP + floodDialers + 50; goroutinesAfterFlood > limit {
		t.Errorf("%d goroutines after the flood, more than %d: refused connections leave goroutines", goroutinesAfterFlood, limit)
	}
}

// floodResult is what floodConnections saw.
type floodResult struct {
	held        []net.Conn // connections the broker served, still open
	attempts    int        // connection attempts made
	refused     int        // connections the broker closed
	otherErrors int
	firstOther  error
	elapsed     time.Duration
}

// floodConnections makes connection attempts from 127.0.0.1,
// floodDialers at a time: floodAttempts of them, and more until done
// reports true or ctx ends. Each sends ApiVersions: a connection answered
// is held open (so the per-IP limit stays reached), one closed by the
// broker is counted as refused.
func floodConnections(ctx context.Context, addr string, done func() bool) floodResult {
	var (
		mu     sync.Mutex
		result floodResult
		next   atomic.Int64
		wg     sync.WaitGroup
		start  = time.Now()
	)
	more := func() bool {
		return next.Add(1) <= floodAttempts || (!done() && ctx.Err() == nil)
	}
	for range floodDialers {
		wg.Go(func() {
			for more() {
				conn, err := dialLocal("127.0.0.1", addr)
				if err == nil {
					err = probe(conn)
				}
				mu.Lock()
				result.attempts++
				switch {
				case err == nil:
					result.held = append(result.held, conn)
				case errors.Is(err, errRefused):
					result.refused++
				default:
					result.otherErrors++
					if result.firstOther == nil {
						result.firstOther = err
					}
				}
				mu.Unlock()
				if err != nil && conn != nil {
					conn.Close()
				}
			}
		})
	}
	wg.Wait()
	result.elapsed = time.Since(start)
	return result
}

// steadyClient produces one record at a time and consumes each back,
// timing each produce round trip, until stopped.
type steadyClient struct {
	cancel context.CancelFunc
	done   chan struct{}
	// roundTrips counts the round trips completed so far, read while the
	// client runs; produced is the same count once stopped.
	roundTrips atomic.Int64
	produced   int
	latencies  []time.Duration
	err        error
}

func startSteadyClient(ctx context.Context, producer, consumer *kgo.Client) *steadyClient {
	ctx, cancel := context.WithCancel(ctx)
	s := &steadyClient{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		s.err = s.run(ctx, producer, consumer)
	}()
	return s
}

// run is the loop: produce record i, then poll until it (and everything
// before it) has been consumed, in order.
func (s *steadyClient) run(ctx context.Context, producer, consumer *kgo.Client) error {
	consumedWarmUp := false
	for i := 0; ctx.Err() == nil; i++ {
		value := fmt.Sprintf("steady-%d", i)
		sent := time.Now()
		if err := producer.ProduceSync(ctx, &kgo.Record{Value: []byte(value)}).FirstErr(); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("produce %d: %w", i, err)
		}
		s.latencies = append(s.latencies, time.Since(sent))
		s.produced++
		for got := false; !got; {
			fetches := consumer.PollFetches(ctx)
			if ctx.Err() != nil {
				return nil
			}
			if err := fetches.Err(); err != nil {
				return fmt.Errorf("fetch after produce %d: %w", i, err)
			}
			for _, record := range fetches.Records() {
				if !consumedWarmUp && string(record.Value) == "warm-up" {
					consumedWarmUp = true
					continue
				}
				if string(record.Value) != value {
					return fmt.Errorf("consumed %q, want %q", record.Value, value)
				}
				got = true
			}
		}
		s.roundTrips.Add(1)
	}
	return nil
}

// stop ends the loop and returns what it measured.
func (s *steadyClient) stop() (int, []time.Duration, error) {
	s.cancel()
	<-s.done
	return s.produced, s.latencies, s.err
}

// percentile returns the p-th percentile (nearest rank) of ds.
func percentile(ds []time.Duration, p int) time.Duration {
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	rank := (len(sorted)*p + 99) / 100
	return sorted[max(rank-1, 0)]
}

// vmRSS is this process's resident set size in bytes.
func vmRSS(t *testing.T) int64 {
	t.Helper()
	rss, err := readRSS()
	if err != nil {
		t.Fatal(err)
	}
	return rss
}

// readRSS reads VmRSS from /proc/self/status, in bytes.
func readRSS() (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("read RSS: %w", err)
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		if rest, ok := strings.CutPrefix(scanner.Text(), "VmRSS:"); ok {
			kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("VmRSS %q: %w", rest, err)
			}
			return kib << 10, nil
		}
	}
	return 0, errors.New("no VmRSS in /proc/self/status")
}

// rssSampler records the highest RSS seen every 50 ms until stopped.
type rssSampler struct {
	stopCh chan struct{}
	done   chan struct{}
	peak   int64
}

func sampleRSS() *rssSampler {
	s := &rssSampler{stopCh: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		ticker := time.NewTicker(50 * time.Millisecond)
		defer ticker.Stop()
		for {
			if rss, err := readRSS(); err == nil {
				s.peak = max(s.peak, rss)
			}
			select {
			case <-s.stopCh:
				return
			case <-ticker.C:
			}
		}
	}()
	return s
}

// stop ends the sampling and returns the peak.
func (s *rssSampler) stop() int64 {
	close(s.stopCh)
	<-s.done
	return s.peak
}
