package metrics

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestHandlerHealthAndReadiness: /healthz is 200 from the start, /readyz
// 503 until ready reports true, /metrics serves the text format.
func TestHandlerHealthAndReadiness(t *testing.T) {
	var ready atomic.Bool
	server := httptest.NewServer(Handler(New(), ready.Load))
	defer server.Close()
	status := func(path string) int {
		t.Helper()
		resp, err := http.Get(server.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := status("/healthz"); got != http.StatusOK {
		t.Errorf("/healthz = %d, want 200", got)
	}
	if got := status("/readyz"); got != http.StatusServiceUnavailable {
		t.Errorf("/readyz before ready = %d, want 503", got)
	}
	ready.Store(true)
	if got := status("/readyz"); got != http.StatusOK {
		t.Errorf("/readyz once ready = %d, want 200", got)
	}
	if got := status("/metrics"); got != http.StatusOK {
		t.Errorf("/metrics = %d, want 200", got)
	}
}

// registeredNames lists the metric names m's registry describes.
func registeredNames(t *testing.T, m *Broker) map[string]bool {
	t.Helper()
	descs := make(chan *prometheus.Desc, 64)
	go func() {
		defer close(descs)
		m.registry.Describe(descs)
	}()
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	names := map[string]bool{}
	for d := range descs {
		if match := fqName.FindStringSubmatch(d.String()); match != nil {
			names[match[1]] = true
		}
	}
	return names
}

// TestDashboardUsesRegisteredMetrics: the Grafana dashboard in docs/ is
// valid JSON and every exactly_* series its queries name is one the
// broker registers (histogram series by their _bucket/_sum/_count).
func TestDashboardUsesRegisteredMetrics(t *testing.T) {
	data, err := os.ReadFile("../../docs/grafana-exactly-broker.json")
	if err != nil {
		t.Fatal(err)
	}
	var dashboard struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &dashboard); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	names := registeredNames(t, New())
	series := regexp.MustCompile(`exactly_[a-z_]+`)
	queries := 0
	for _, panel := range dashboard.Panels {
		for _, target := range panel.Targets {
			queries++
			for _, name := range series.FindAllString(target.Expr, -1) {
				base := name
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if trimmed, ok := strings.CutSuffix(name, suffix); ok && names[trimmed] {
						base = trimmed
					}
				}
				if !names[base] {
					t.Errorf("panel %q queries %s, which the broker does not register", panel.Title, name)
				}
			}
		}
	}
	if queries < 20 {
		t.Errorf("dashboard has %d queries, want the full set (at least 20)", queries)
	}
}

// TestContractNames: every broker metric of the metrics contract is
// registered under its name.
func TestContractNames(t *testing.T) {
	names := registeredNames(t, New())
	for _, name := range []string{
		"exactly_requests_total", "exactly_request_errors_total", "exactly_request_queue_seconds",
		"exactly_request_local_seconds", "exactly_request_durability_wait_seconds", "exactly_request_send_seconds",
		"exactly_request_total_seconds", "exactly_topic_bytes_in_total", "exactly_topic_bytes_out_total",
		"exactly_produce_batches_total", "exactly_produce_records_total", "exactly_idempotent_duplicates_total",
		"exactly_out_of_order_sequences_total", "exactly_transactions_begun_total", "exactly_transactions_committed_total",
		"exactly_transactions_aborted_total", "exactly_transactions_timed_out_total", "exactly_transaction_markers_written_total",
		"exactly_end_txn_seconds", "exactly_transactions_open", "exactly_partition_lso_lag_records",
		"exactly_group_rebalances_total", "exactly_group_members", "exactly_group_offsets_committed_total",
		"exactly_log_end_offset", "exactly_log_segments", "exactly_log_size_bytes", "exactly_fsync_total",
		"exactly_fsync_seconds", "exactly_connections_opened_total", "exactly_connections_closed_total",
		"exactly_connections_refused_total", "exactly_connections_open",
		"exactly_partitions", "exactly_leader_partitions", "exactly_under_replicated_partitions",
		"exactly_under_min_isr_partitions", "exactly_isr_shrinks_total", "exactly_isr_expands_total",
		"exactly_active_controller", "exactly_offline_partitions", "exactly_group_lag_records", "exactly_quorum_index",
		"go_goroutines", "process_cpu_seconds_total",
	} {
		if !names[name] {
			t.Errorf("%s is not registered", name)
		}
	}
}
