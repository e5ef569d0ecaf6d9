package metrics

import (
	"math"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// finiteBuckets is, per family and api label, the number of finite
// buckets of each request-time series m has; a family absent for an api
// is absent from its map.
func finiteBuckets(t *testing.T, m *Broker) map[string]map[string]int {
	t.Helper()
	families, err := m.registry.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string]map[string]int{}
	for _, family := range families {
		for _, metric := range family.GetMetric() {
			if metric.Histogram == nil {
				continue
			}
			api := ""
			for _, pair := range metric.GetLabel() {
				if pair.GetName() == "api" {
					api = pair.GetValue()
				}
			}
			if api == "" {
				continue
			}
			finite := 0
			for _, bucket := range metric.Histogram.GetBucket() {
				if !math.IsInf(bucket.GetUpperBound(), +1) {
					finite++
				}
			}
			if out[family.GetName()] == nil {
				out[family.GetName()] = map[string]int{}
			}
			out[family.GetName()][api] = finite
		}
	}
	return out
}

// TestRequestHistograms: which per-API request-time series have buckets
// under each setting, that the durability wait is kept for Produce only,
// and that every series counts its observations either way.
func TestRequestHistograms(t *testing.T) {
	const total, queue, durability = "exactly_request_total_seconds", "exactly_request_queue_seconds", "exactly_request_durability_wait_seconds"
	full := len(latencyBuckets)
	for _, tc := range []struct {
		setting RequestHistograms
		want    map[string]map[string]int // family → api → finite buckets
	}{
		{RequestHistogramsDefault, map[string]map[string]int{
			total:      {"Produce": full, "EndTxn": full, "Heartbeat": full, "ApiVersions": 0, "Metadata": 0},
			queue:      {"Produce": 0, "EndTxn": 0, "Heartbeat": 0, "ApiVersions": 0, "Metadata": 0},
			durability: {"Produce": 0},
		}},
		{RequestHistogramsAll, map[string]map[string]int{
			total:      {"Produce": full, "EndTxn": full, "Heartbeat": full, "ApiVersions": full, "Metadata": full},
			queue:      {"Produce": full, "EndTxn": full, "Heartbeat": full, "ApiVersions": full, "Metadata": full},
			durability: {"Produce": full},
		}},
		{RequestHistogramsNone, map[string]map[string]int{
			total:      {"Produce": 0, "EndTxn": 0, "Heartbeat": 0, "ApiVersions": 0, "Metadata": 0},
			queue:      {"Produce": 0, "EndTxn": 0, "Heartbeat": 0, "ApiVersions": 0, "Metadata": 0},
			durability: {"Produce": 0},
		}},
	} {
		t.Run(tc.setting.String(), func(t *testing.T) {
			m := New()
			m.SetRequestHistograms(tc.setting)
			for key, name := range map[int16]string{0: "Produce", 26: "EndTxn", 12: "Heartbeat", 18: "ApiVersions", 3: "Metadata"} {
				api := m.API(key, name)
				for _, o := range []prometheus.Observer{api.Queue, api.Local, api.Durability, api.Send, api.Total} {
					o.Observe(0.001)
				}
			}
			got := finiteBuckets(t, m)
			for family, apis := range tc.want {
				for api, want := range apis {
					buckets, ok := got[family][api]
					if !ok || buckets != want {
						t.Errorf("%s{api=%q}: %d finite buckets (present %v), want %d", family, api, buckets, ok, want)
					}
				}
				if len(got[family]) != len(apis) {
					t.Errorf("%s has series for %v, want for %d APIs", family, got[family], len(apis))
				}
			}
		})
	}
}

// TestRequestHistogramsChange: a setting changed after requests were
// counted moves the series without duplicating any (Gather would fail).
func TestRequestHistogramsChange(t *testing.T) {
	m := New()
	m.API(18, "ApiVersions").Total.Observe(0.001)
	m.SetRequestHistograms(RequestHistogramsAll)
	m.API(18, "ApiVersions").Total.Observe(0.001)
	if got := finiteBuckets(t, m)["exactly_request_total_seconds"]["ApiVersions"]; got != len(latencyBuckets) {
		t.Errorf("ApiVersions after the change to all: %d finite buckets, want %d", got, len(latencyBuckets))
	}
}

// TestParseRequestHistograms: the setting's values round-trip; others
// are an error.
func TestParseRequestHistograms(t *testing.T) {
	for _, h := range []RequestHistograms{RequestHistogramsDefault, RequestHistogramsAll, RequestHistogramsNone} {
		if got, err := ParseRequestHistograms(h.String()); err != nil || got != h {
			t.Errorf("ParseRequestHistograms(%q) = %v, %v", h.String(), got, err)
		}
	}
	for _, bad := range []string{"", "All", "some"} {
		if _, err := ParseRequestHistograms(bad); err == nil {
			t.Errorf("ParseRequestHistograms(%q): no error", bad)
		}
	}
}
