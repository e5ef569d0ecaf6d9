package wire

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestAPINamesMatchKmsg(t *testing.T) {
	for key := int16(-1); key < 200; key++ {
		want := kmsg.NameForKey(key)
		got := APIName(key)
		if want == "Unknown" {
			if got != fmt.Sprintf("Unknown(%d)", key) {
				t.Errorf("key %d: %q, want Unknown", key, got)
			}
			continue
		}
		if got != want {
			t.Errorf("key %d: %q, kmsg %q", key, got, want)
		}
	}
	if APIProduce != 0 || APIFetch != 1 || APIVersions != 18 || APIInitProducerID != 22 ||
		APIEndTxn != 26 || APIDeleteShareGroupOffsets != 92 {
		t.Errorf("constants drifted")
	}
}

func TestVersionTable(t *testing.T) {
	var table VersionTable
	if _, ok := table.Lookup(0); ok || table.Supports(0, 0) || len(table.Ranges()) != 0 {
		t.Fatal("empty table claims support")
	}
	table.Add(APIVersions, 0, 4)
	table.Add(APIProduce, 3, 13)
	table.Add(APIEndTxn, 0, 5)
	table.Add(APIProduce, 3, 12) // replaces
	want := []VersionRange{{APIProduce, 3, 12}, {APIVersions, 0, 4}, {APIEndTxn, 0, 5}}
	if got := table.Ranges(); !reflect.DeepEqual(got, want) {
		t.Fatalf("ranges %v, want %v", got, want)
	}
	checks := []struct {
		key, version int16
		want         bool
	}{
		{APIProduce, 2, false}, {APIProduce, 3, true}, {APIProduce, 12, true}, {APIProduce, 13, false},
		{APIFetch, 0, false}, {-1, 0, false}, {APIEndTxn, 5, true}, {1000, 0, false},
	}
	for _, c := range checks {
		if got := table.Supports(c.key, c.version); got != c.want {
			t.Errorf("Supports(%s, %d) = %v", APIName(c.key), c.version, got)
		}
	}
	defer func() {
		if recover() == nil {
			t.Errorf("min > max accepted")
		}
	}()
	table.Add(APIFetch, 5, 4)
}
