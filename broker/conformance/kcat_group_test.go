package conformance_test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// kcat (librdkafka) in balanced consumer mode (-G): it joins a group with
// librdkafka's own versions of the group APIs (JoinGroup v5, SyncGroup v3,
// OffsetCommit v7, ...), consumes everything, commits on close, and a
// second run in the same group resumes where the first committed.
func TestGroupKcatBalancedConsumer(t *testing.T) {
	t.Parallel()
	kcat := requireKcat(t)
	const partitions = 3
	b := startBroker(t, groupTestProperties())
	admin := newClient(t, b)
	createTopic(t, b.Addr(), "kcat-group", partitions)
	produceNumbered(t, b, "kcat-group", partitions, 300)

	consume := func(count int) map[string]bool {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		command := exec.CommandContext(ctx, kcat, "-b", b.Addr(), "-G", "kcat-consumers", "kcat-group",
			"-X", "auto.offset.reset=earliest", "-c", fmt.Sprint(count), "-f", "%p:%o\n", "-q")
		output, err := command.Output()
		if err != nil {
			t.Fatalf("kcat -G: %v (output %q)", err, output)
		}
		seen := map[string]bool{}
		for _, line := range strings.Fields(string(output)) {
			if seen[line] {
				t.Fatalf("kcat saw partition:offset %s twice", line)
			}
			seen[line] = true
		}
		if len(seen) != count {
			t.Fatalf("kcat consumed %d records, want %d", len(seen), count)
		}
		return seen
	}
	consume(300)
	committed := committedOffsets(t, admin, "kcat-consumers", "kcat-group")
	for p := range int32(partitions) {
		if committed[p] != 100 {
			t.Fatalf("kcat committed %v, want 100 per partition", committed)
		}
	}

	// Ten more per partition (offsets 100..109): the second run in the
	// group reads exactly those.
	produceNumbered(t, b, "kcat-group", partitions, 30)
	for line := range consume(30) {
		var partition, offset int
		if _, err := fmt.Sscanf(line, "%d:%d", &partition, &offset); err != nil || offset < 100 || offset > 109 {
			t.Fatalf("the second kcat run read partition:offset %s, want only offsets 100..109", line)
		}
	}
}
