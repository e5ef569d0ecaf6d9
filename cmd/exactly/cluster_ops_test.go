package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/internal/loopback"
)

// TestClusterAddBrokerAndDrain: `exactly cluster add-broker` starts a
// fourth broker of a running `exactly cluster` and moves a fair share of
// the replicas (the internal topics' too) to it; `exactly cluster drain`
// then moves every replica off broker 2. Every record produced before is
// read back after, and the replicas end where the commands said.
func TestClusterAddBrokerAndDrain(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a 4-broker cluster")
	}
	port := freeClusterPort(t, 4)
	dir := t.TempDir()
	cluster := startCommand(t, "cluster", "--brokers", "3", "--data-dir", dir, "--listen", net.JoinHostPort(loopback.Host(), strconv.Itoa(port)))
	_, bootstrap, _ := strings.Cut(cluster.waitLine(t, "bootstrap: ", 90*time.Second), "bootstrap: ")
	seeds := strings.Split(bootstrap, ",")
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("grow"), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 6, 3, nil, "grow"); err != nil {
		t.Fatal(err)
	}
	const n = 300
	for i := range n {
		cl.Produce(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("r%03d", i))}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	added := startCommand(t, "cluster", "add-broker", "--data-dir", dir)
	added.waitLine(t, "broker 4 is in the cluster", 90*time.Second)
	added.waitLine(t, "preferred leaders elected", 90*time.Second)
	replicas := replicaCounts(ctx, t, adm)
	if replicas[4] == 0 {
		t.Fatalf("broker 4 holds no replica after add-broker: %v", replicas)
	}
	for _, count := range replicas {
		if count > replicas[4]+1 || count < replicas[4]-1 {
			t.Fatalf("replicas per broker after add-broker not within one: %v", replicas)
		}
	}

	var out, errs bytes.Buffer
	if code := run([]string{"cluster", "drain", "--bootstrap", bootstrap, "--broker", "2", "--timeout", "90s"}, &out, &errs); code != 0 {
		t.Fatalf("drain: exit %d\n%s%s", code, out.String(), errs.String())
	}
	if !strings.Contains(out.String(), "broker 2 holds no replica") {
		t.Fatalf("drain said:\n%s", out.String())
	}
	if replicas := replicaCounts(ctx, t, adm); replicas[2] != 0 {
		t.Fatalf("broker 2 holds %d replicas after the drain: %v", replicas[2], replicas)
	}
	var read []string
	consumer, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics("grow"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	for len(read) < n && ctx.Err() == nil {
		consumer.PollFetches(ctx).EachRecord(func(r *kgo.Record) { read = append(read, string(r.Value)) })
	}
	slices.Sort(read)
	if distinct := len(slices.Compact(slices.Clone(read))); len(read) != n || distinct != n {
		t.Fatalf("read %d records (%d distinct), want %d", len(read), distinct, n)
	}
}

// replicaCounts counts every partition's replicas per broker (internal
// topics included).
func replicaCounts(ctx context.Context, t *testing.T, adm *kadm.Client) map[int32]int {
	t.Helper()
	md, err := adm.Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[int32]int{}
	for _, b := range md.Brokers {
		counts[b.NodeID] = 0
	}
	for _, td := range md.Topics {
		for _, pd := range td.Partitions {
			for _, r := range pd.Replicas {
				counts[r]++
			}
		}
	}
	return counts
}
