package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/loadgen"
	"github.com/exactly-eos/exactly/loadgen/faults"
)

// TestClusterSurvivesKillingEveryBroker: an idempotent acks=all producer
// writes to a replication-factor-3 topic on a launched 3-broker cluster;
// then every broker is killed with SIGKILL at once and restarted on its
// data. Every acknowledged record is read back afterwards, once, at the
// offset it was acknowledged at.
func TestClusterSurvivesKillingEveryBroker(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("launches a 3-broker cluster")
	}
	asExactlySelf(t)
	self, _ := selfCommand()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	target, err := loadgen.StartTarget(ctx, loadgen.TargetConfig{Kind: loadgen.TargetCluster, Self: self})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { target.Close() })
	processes := target.(interface{ Processes() []*faults.Process }).Processes()

	const topic, partitions, records = "crash-all", 3, 3000
	client, err := kgo.NewClient(kgo.SeedBrokers(target.Bootstrap()...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	create := kmsg.NewPtrCreateTopicsRequest()
	createTopic := kmsg.NewCreateTopicsRequestTopic()
	createTopic.Topic, createTopic.NumPartitions, createTopic.ReplicationFactor = topic, partitions, 3
	create.Topics = append(create.Topics, createTopic)
	created, err := create.RequestWith(ctx, client)
	if err == nil {
		err = kerr.ErrorForCode(created.Topics[0].ErrorCode)
	}
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	acked := map[string]kgo.Record{} // value -> the acknowledged record
	for i := range records {
		value := fmt.Sprintf("record-%05d", i)
		result := client.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(value)})
		if err := result.FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", value, err)
		}
		record, _ := result.First()
		acked[value] = *record
	}
	client.Close()

	for _, process := range processes {
		if err := process.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	for _, process := range processes {
		if err := process.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}

	reader, err := kgo.NewClient(kgo.SeedBrokers(target.Bootstrap()...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	seen := map[string]int{}
	for len(seen) < len(acked) && ctx.Err() == nil {
		fetches := reader.PollFetches(ctx)
		fetches.EachRecord(func(r *kgo.Record) {
			value := string(r.Value)
			seen[value]++
			if want, ok := acked[value]; !ok || want.Partition != r.Partition || want.Offset != r.Offset {
				t.Errorf("%s read at %d/%d, acknowledged at %d/%d", value, r.Partition, r.Offset, want.Partition, want.Offset)
			}
		})
	}
	missing := 0
	for value := range acked {
		if seen[value] == 0 {
			missing++
		} else if seen[value] > 1 {
			t.Errorf("%s read %d times", value, seen[value])
		}
	}
	if missing > 0 {
		t.Fatalf("%d of %d acknowledged records missing after every broker was killed and restarted", missing, len(acked))
	}
}
