package clusternode

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// A single broker is a cluster of one: its quorum runs in process, its
// topics (the internal ones too) are the quorum's, and a restart over the
// same data directory — on another port — keeps committed records, aborted
// ones hidden from read_committed, and committed group offsets.
func TestClusterOfOne(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	start := func() *Member {
		t.Helper()
		m, err := Start(Config{NodeID: 4, Listen: "127.0.0.1:0", DataDir: dir, Logger: testLogger()})
		if err != nil {
			t.Fatalf("start a cluster of one: %v", err)
		}
		return m
	}
	m := start()
	if !m.Node().IsController() {
		t.Error("the only voter is not the controller when Start returns")
	}
	for _, sub := range []string{"quorum", "broker"} {
		if _, err := os.Stat(filepath.Join(dir, sub)); err != nil {
			t.Errorf("data directory: %v", err)
		}
	}
	seeds := []string{m.Addr()}
	admin, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	createTopic(t, admin, "t", 2, -1)
	if code := createTopicAnswer(t, admin, "wide", 1, 2).ErrorCode; code != kerr.InvalidReplicationFactor.Code {
		t.Errorf("a topic of 2 replicas on a cluster of one: %v, want INVALID_REPLICATION_FACTOR", kerr.ErrorForCode(code))
	}
	admin.Close()
	if p, ok := m.Node().Image().Partition("t", 1); !ok || p.Leader != 4 || len(p.ISR) != 1 || p.ISR[0] != 4 {
		t.Errorf("partition t-1 in the quorum: %+v, want led by 4 with ISR [4]", p)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	producer, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.TransactionalID("one"), kgo.DefaultProduceTopic("t"))
	if err != nil {
		t.Fatal(err)
	}
	transaction := func(prefix string, commit kgo.TransactionEndTry) {
		t.Helper()
		if err := producer.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 50 {
			value := []byte(prefix + "-" + string(rune('a'+i%26)))
			if err := producer.ProduceSync(ctx, &kgo.Record{Partition: int32(i % 2), Value: value}).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
		}
		if err := producer.EndTransaction(ctx, commit); err != nil {
			t.Fatalf("end transaction: %v", err)
		}
	}
	transaction("committed", kgo.TryCommit)
	transaction("aborted", kgo.TryAbort)
	producer.Close()
	commitOffset(ctx, t, seeds, "g", "t", 0, 17)
	if err := m.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	m = start()
	defer m.Close()
	seeds = []string{m.Addr()}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics("t"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	var committed int
	for committed < 50 {
		fetches := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("after the restart, read %d of 50 committed records", committed)
		}
		fetches.EachError(func(_ string, _ int32, err error) { t.Logf("fetch: %v", err) })
		fetches.EachRecord(func(r *kgo.Record) {
			if !strings.HasPrefix(string(r.Value), "committed-") {
				t.Errorf("read_committed read %q at %s-%d@%d", r.Value, r.Topic, r.Partition, r.Offset)
			}
			committed++
		})
	}
	if got := fetchOffset(ctx, t, seeds, "g", "t", 0); got != 17 {
		t.Errorf("group g's offset of t-0 after the restart: %d, want 17", got)
	}
}

// A data directory written by a single broker of an earlier version is
// refused with one line that says what to do, and left as it was.
func TestClusterOfOneRefusesOldLayout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "topics.json"), []byte(`{"topics":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := Start(Config{Listen: "127.0.0.1:0", DataDir: dir, Logger: testLogger()})
	if err == nil {
		m.Close()
		t.Fatal("started over a single broker's old data directory")
	}
	if text := err.Error(); strings.Contains(text, "\n") || !strings.Contains(text, "mv "+dir+" "+dir+".old") {
		t.Errorf("refusal %q: want one line naming the move", text)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("the refused data directory changed: %v", entries)
	}
}

// commitOffset commits offset for group's partition of topic with a
// simple (generation -1) OffsetCommit at the group's coordinator (at most
// v9, which names topics, not topic ids).
func commitOffset(ctx context.Context, t *testing.T, seeds []string, groupID, topic string, partition int32, offset int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.MaxVersions(kversion.V3_9_0()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = groupID, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = partition, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("OffsetCommit: %v", err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode); err != nil {
		t.Fatalf("OffsetCommit: %v", err)
	}
}

// fetchOffset is group's committed offset of topic's partition.
func fetchOffset(ctx context.Context, t *testing.T, seeds []string, groupID, topic string, partition int32) int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.MaxVersions(kversion.V3_9_0()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = groupID
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{partition}
	req.Topics = append(req.Topics, rt)
	for {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("OffsetFetch: %v", err)
		}
		err = kerr.ErrorForCode(resp.ErrorCode)
		if err == nil {
			err = kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
		}
		if err == nil {
			return resp.Topics[0].Partitions[0].Offset
		}
		if !errors.Is(err, kerr.CoordinatorLoadInProgress) || ctx.Err() != nil {
			t.Fatalf("OffsetFetch: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
