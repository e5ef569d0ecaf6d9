package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestEmbeddedTargetServesMetrics: the loadgen's embedded broker serves
// its metrics on a loopback port named by MetricsURL, ready once started.
func TestEmbeddedTargetServesMetrics(t *testing.T) {
	target, err := startEmbedded(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	metricsURL := target.(*embeddedTarget).MetricsURL()
	if !strings.HasPrefix(metricsURL, "http://127.0.0.1:") || !strings.HasSuffix(metricsURL, "/metrics") {
		t.Fatalf("MetricsURL = %q, want http://127.0.0.1:port/metrics", metricsURL)
	}
	client := http.Client{Timeout: 10 * time.Second}
	get := func(url string) (int, string) {
		t.Helper()
		resp, err := client.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(body)
	}
	status, body := get(metricsURL)
	if status != http.StatusOK || !strings.Contains(body, "exactly_connections_open") || !strings.Contains(body, "go_goroutines") {
		t.Fatalf("GET %s: %d, body without the broker's and the Go collectors' metrics:\n%.500s", metricsURL, status, body)
	}
	if status, _ := get(strings.TrimSuffix(metricsURL, "/metrics") + "/readyz"); status != http.StatusOK {
		t.Errorf("/readyz of the started embedded broker = %d, want 200", status)
	}
}
