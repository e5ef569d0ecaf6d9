package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/loadgen"
)

// TestEmbeddedTargetServesMetrics: the loadgen's embedded broker serves
// its metrics on a loopback port named by MetricsURL, ready once started.
func TestEmbeddedTargetServesMetrics(t *testing.T) {
	t.Parallel()
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

// A workload running consumer-crash on the consumer protocol gets an
// embedded broker whose group.consumer.session.timeout.ms is the crash
// workers' classic session (6 s), as DescribeConfigs tells the loadgen.
func TestEmbeddedForConsumerCrashSession(t *testing.T) {
	t.Parallel()
	workload, err := loadgen.LoadWorkload("quick")
	if err != nil {
		t.Fatal(err)
	}
	workload.Faults = []loadgen.MatrixEntry{{Plan: "consumer-crash"}}
	workload.GroupProtocol = loadgen.GroupProtocolConsumer
	target, err := embeddedFor(loadgen.LaunchedBrokerProperties(workload))(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	client, err := kgo.NewClient(kgo.SeedBrokers(target.Bootstrap()...))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	request := kmsg.NewPtrDescribeConfigsRequest()
	resource := kmsg.NewDescribeConfigsRequestResource()
	resource.ResourceType, resource.ResourceName = kmsg.ConfigResourceTypeBroker, "0"
	resource.ConfigNames = []string{"group.consumer.session.timeout.ms", "group.consumer.heartbeat.interval.ms"}
	request.Resources = append(request.Resources, resource)
	response, err := request.RequestWith(t.Context(), client)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, described := range response.Resources {
		for _, config := range described.Configs {
			if config.Value != nil {
				got[config.Name] = *config.Value
			}
		}
	}
	if got["group.consumer.session.timeout.ms"] != "6000" || got["group.consumer.heartbeat.interval.ms"] != "500" {
		t.Errorf("embedded broker for consumer-crash on the consumer protocol describes %v, want the session 6000 and the heartbeat 500", got)
	}
}
