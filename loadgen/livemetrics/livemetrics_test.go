package livemetrics

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// scrape serves l on a loopback port and returns one scrape's body.
func scrape(t *testing.T, l *Loadgen) string {
	t.Helper()
	server, err := Serve("127.0.0.1:0", l)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := server.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, server.URL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	response, err := http.DefaultClient.Do(request)
	if err != nil {
		t.Fatal(err)
	}
	defer response.Body.Close()
	body, err := io.ReadAll(response.Body)
	if err != nil || response.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s, %v", server.URL(), response.Status, err)
	}
	return string(body)
}

// fed is a Loadgen with a little of everything counted.
func fed() *Loadgen {
	l := New()
	mode := l.Mode("transactional")
	for range 3 {
		mode.Sent()
	}
	mode.Acked(2 * time.Millisecond)
	mode.Acked(40 * time.Millisecond)
	mode.AckedUntimed()
	mode.Failed()
	l.AddChecked("transactional", CheckerCounts{Duplicated: 2})
	l.AddChecked("transactional", CheckerCounts{Duplicated: 1, Lost: 4})
	l.FaultFired("ack-loss")
	return l
}

func TestMetricsServed(t *testing.T) {
	body := scrape(t, fed())
	for _, line := range []string{
		`exactly_loadgen_records_sent_total{mode="transactional"} 3`,
		`exactly_loadgen_records_acked_total{mode="transactional"} 3`,
		`exactly_loadgen_records_failed_total{mode="transactional"} 1`,
		`exactly_loadgen_ack_latency_seconds_bucket{mode="transactional",le="0.0025"} 1`,
		`exactly_loadgen_ack_latency_seconds_bucket{mode="transactional",le="0.05"} 2`,
		`exactly_loadgen_ack_latency_seconds_count{mode="transactional"} 2`,
		`exactly_loadgen_checker_records{mode="transactional",verdict="duplicated"} 3`,
		`exactly_loadgen_checker_records{mode="transactional",verdict="lost"} 4`,
		`exactly_loadgen_checker_records{mode="transactional",verdict="reordered"} 0`,
		`exactly_loadgen_faults_fired_total{fault="ack-loss"} 1`,
		`go_goroutines `,
	} {
		if !strings.Contains(body, line) {
			t.Errorf("/metrics lacks %q", line)
		}
	}
	if t.Failed() {
		t.Log(body)
	}
}

// TestNilIsOff: metrics off is a nil *Loadgen, whose methods do nothing.
func TestNilIsOff(t *testing.T) {
	var l *Loadgen
	mode := l.Mode("at-least-once")
	if mode != nil {
		t.Fatalf("nil Loadgen gave a Mode")
	}
	mode.Sent()
	mode.Acked(time.Millisecond)
	mode.AckedUntimed()
	mode.Failed()
	l.AddChecked("at-least-once", CheckerCounts{Lost: 1})
	l.FaultFired("x")
}

// TestPromtoolCheckMetrics runs `promtool check metrics` (Prometheus'
// linter) on the served output. Without promtool it skips, except in CI
// (EXACTLY_CI=1), where it fails.
func TestPromtoolCheckMetrics(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("EXACTLY_CI") == "1" {
			t.Fatal("promtool not found (install Debian's prometheus package)")
		}
		t.Skip("promtool not found: install Debian's prometheus package to lint /metrics")
	}
	body := scrape(t, fed())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	command := exec.CommandContext(ctx, promtool, "check", "metrics")
	command.Stdin = strings.NewReader(body)
	var output bytes.Buffer
	command.Stdout, command.Stderr = &output, &output
	if err := command.Run(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, output.String())
	}
}

// BenchmarkAcked is the hot path's cost per acknowledged record with
// metrics on (one counter, one histogram observation) and off (a nil
// check).
func BenchmarkAcked(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		var l *Loadgen
		if on {
			name, l = "on", New()
		}
		mode := l.Mode("transactional")
		b.Run(name, func(b *testing.B) {
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					mode.Acked(3 * time.Millisecond)
				}
			})
		})
	}
}
