package suggest

import "testing"

func TestClosest(t *testing.T) {
	t.Parallel()
	candidates := []string{"at-least-once", "idempotent", "transactional", "log.retention.ms", "log.retention.bytes", "node.id"}
	for _, tc := range []struct{ name, want string }{
		{"idempotnet", "idempotent"},
		{"transactionl", "transactional"},
		{"at-least-one", "at-least-once"},
		{"log.retention.msec", "log.retention.ms"},
		{"Node.Id", "node.id"},
		{"transact", "transactional"},
		{"zzz", ""},
		{"exactly-once-please", ""},
		{"", ""},
	} {
		if got := Closest(tc.name, candidates); got != tc.want {
			t.Errorf("Closest(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := DidYouMean("idempotnet", candidates); got != "; did you mean idempotent?" {
		t.Errorf("DidYouMean = %q", got)
	}
	if got := DidYouMean("zzz", candidates); got != "" {
		t.Errorf("DidYouMean(zzz) = %q, want empty", got)
	}
}
