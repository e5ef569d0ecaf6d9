package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestServedAPIsMatchApiVersions: ServedAPIs, which the documentation's
// table and `exactly broker --help` are generated from, lists exactly the
// keys and ranges ApiVersions advertises, and each has a registered
// handler.
func TestServedAPIsMatchApiVersions(t *testing.T) {
	resp := kmsg.NewPtrApiVersionsResponse()
	appendVersionRanges(resp)
	served := ServedAPIs()
	if len(served) != len(resp.ApiKeys) {
		t.Fatalf("ServedAPIs lists %d APIs, ApiVersions advertises %d", len(served), len(resp.ApiKeys))
	}
	for i, s := range served {
		k := resp.ApiKeys[i]
		if s.Key != k.ApiKey || s.Min != k.MinVersion || s.Max != k.MaxVersion {
			t.Errorf("ServedAPIs[%d] = %s %d v%d-%d, ApiVersions advertises key %d v%d-%d", i, s.Name, s.Key, s.Min, s.Max, k.ApiKey, k.MinVersion, k.MaxVersion)
		}
		if s.Name != kmsg.NameForKey(s.Key) {
			t.Errorf("key %d: name %q, want %q", s.Key, s.Name, kmsg.NameForKey(s.Key))
		}
		h, ok := handlers[s.Key]
		if !ok || h.minVersion != s.Min || h.maxVersion != s.Max {
			t.Errorf("%s: no handler registered for v%d-%d", s.Name, s.Min, s.Max)
		}
		if i > 0 && served[i-1].Key >= s.Key {
			t.Errorf("ServedAPIs not in key order at %s", s.Name)
		}
	}
	if len(served) != len(handlers) {
		t.Errorf("ServedAPIs lists %d APIs, %d handlers are registered", len(served), len(handlers))
	}
}
