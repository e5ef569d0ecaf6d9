package bench

// What replication costs (issue 18): acks=all idempotent produce of 1 KiB
// records to a topic with replication factor 3 (min.insync.replicas 2)
// against the same to replication factor 1, on one in-process 3-broker
// cluster (broker/clusternode: the Raft quorum and replicated brokers).
// The slots take turns in rounds — rf=1, rf=1 again (the A/A pair: the
// noise floor), rf=3 — so noise from the shared machine falls on all
// alike; each round moves b.N/rounds records per slot. Reported: each
// slot's records/s (median of the rounds), the ratios rf=3/rf=1 and
// A/A, and each slot's p99 acknowledgement latency.
//
//	go test ./bench/ -run '^$' -bench Replication -benchtime 200000x

import (
	"github.com/exactly-eos/exactly/internal/loopback"

	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/clusternode"
	"github.com/exactly-eos/exactly/broker/quorum"
)

const (
	replicationBenchPartitions = 6
	replicationBenchRounds     = 10
)

// replicationSlot is one side of the comparison.
type replicationSlot struct {
	name    string
	topic   string
	client  *kgo.Client
	rates   []float64 // records/s of each round
	mu      sync.Mutex
	latency *hdrhistogram.Histogram // µs from Produce to its acknowledgement (guarded by mu)
}

// round produces count records round-robin over the partitions and waits
// for every acknowledgement.
func (s *replicationSlot) round(ctx context.Context, value []byte, count int) error {
	start := time.Now()
	var firstErr error
	var errMu sync.Mutex
	for i := range count {
		sent := time.Now()
		record := &kgo.Record{Topic: s.topic, Partition: int32(i % replicationBenchPartitions), Value: value}
		s.client.Produce(ctx, record, func(_ *kgo.Record, err error) {
			if err != nil {
				errMu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				errMu.Unlock()
				return
			}
			s.mu.Lock()
			s.latency.RecordValue(time.Since(sent).Microseconds())
			s.mu.Unlock()
		})
	}
	if err := s.client.Flush(ctx); err != nil {
		return fmt.Errorf("%s: flush: %w", s.name, err)
	}
	s.rates = append(s.rates, float64(count)/time.Since(start).Seconds())
	errMu.Lock()
	defer errMu.Unlock()
	if firstErr != nil {
		return fmt.Errorf("%s: produce: %w", s.name, firstErr)
	}
	return nil
}

// startBenchCluster starts a 3-member cluster on loopback and returns its
// listeners; the members are closed by b.Cleanup.
func startBenchCluster(b *testing.B) []string {
	b.Helper()
	free := func() string {
		addr, err := loopback.FreeAddr() // internal/loopback: nobody else binds it meanwhile
		if err != nil {
			b.Fatal(err)
		}
		return addr
	}
	voters := map[int32]quorum.VoterAddrs{}
	for id := int32(1); id <= 3; id++ {
		voters[id] = quorum.VoterAddrs{Raft: free(), RPC: free()}
	}
	var addrs []string
	for id := int32(1); id <= 3; id++ {
		member, err := clusternode.Start(clusternode.Config{NodeID: id, Listen: "127.0.0.1:0", DataDir: b.TempDir(),
			Voters: voters})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { member.Close() })
		addrs = append(addrs, member.Addr())
	}
	return addrs
}

// createReplicatedTopic creates topic with replicationFactor replicas
// (min.insync.replicas 2 when replicated), retrying while the cluster is
// still registering its brokers.
func createReplicatedTopic(ctx context.Context, b *testing.B, client *kgo.Client, topic string, replicationFactor int16) {
	b.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		request := kmsg.NewPtrCreateTopicsRequest()
		requestTopic := kmsg.NewCreateTopicsRequestTopic()
		requestTopic.Topic, requestTopic.NumPartitions, requestTopic.ReplicationFactor = topic, replicationBenchPartitions, replicationFactor
		if replicationFactor > 1 {
			// acks=all waits for two of the three replicas at least.
			config := kmsg.NewCreateTopicsRequestTopicConfig()
			config.Name, config.Value = "min.insync.replicas", kmsg.StringPtr("2")
			requestTopic.Configs = append(requestTopic.Configs, config)
		}
		request.Topics = append(request.Topics, requestTopic)
		response, err := request.RequestWith(ctx, client)
		if err == nil {
			err = kerr.ErrorForCode(response.Topics[0].ErrorCode)
		}
		if err == nil || err == kerr.TopicAlreadyExists {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("create %s: %v", topic, err)
		}
		time.Sleep(200 * time.Millisecond) // the cluster may still be registering its brokers
	}
}

func BenchmarkReplication(b *testing.B) {
	ctx := context.Background()
	addrs := startBenchCluster(b)
	admin, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		b.Fatal(err)
	}
	defer admin.Close()
	var slots []*replicationSlot
	for _, spec := range []struct {
		name string
		rf   int16
	}{{"rf=1", 1}, {"rf=1 (A/A)", 1}, {"rf=3", 3}} {
		topic := fmt.Sprintf("replication-bench-%d-%d", len(slots), spec.rf)
		createReplicatedTopic(ctx, b, admin, topic, spec.rf)
		client, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()))
		if err != nil {
			b.Fatal(err)
		}
		defer client.Close()
		slots = append(slots, &replicationSlot{name: spec.name, topic: topic, client: client,
			latency: hdrhistogram.New(1, 60_000_000, 3)})
	}
	value := make([]byte, 1024)
	perRound := max(1, b.N/replicationBenchRounds)
	// Warm up: metadata, connections, producer ids.
	for _, slot := range slots {
		if err := slot.round(ctx, value, min(perRound, 1000)); err != nil {
			b.Fatal(err)
		}
		slot.rates, slot.latency = nil, hdrhistogram.New(1, 60_000_000, 3)
	}
	b.ResetTimer()
	for range replicationBenchRounds {
		for _, slot := range slots {
			if err := slot.round(ctx, value, perRound); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	median := func(values []float64) float64 {
		sorted := slices.Clone(values)
		slices.Sort(sorted)
		return sorted[len(sorted)/2]
	}
	ratio := func(a, base *replicationSlot) float64 {
		var ratios []float64
		for i := range a.rates {
			ratios = append(ratios, a.rates[i]/base.rates[i])
		}
		return median(ratios)
	}
	rf1, aa, rf3 := slots[0], slots[1], slots[2]
	b.ReportMetric(median(rf1.rates), "rf1-rec/s")
	b.ReportMetric(median(rf3.rates), "rf3-rec/s")
	b.ReportMetric(ratio(rf3, rf1), "rf3/rf1")
	b.ReportMetric(ratio(aa, rf1), "aa/rf1")
	b.ReportMetric(float64(rf1.latency.ValueAtQuantile(99))/1000, "rf1-p99-ms")
	b.ReportMetric(float64(aa.latency.ValueAtQuantile(99))/1000, "aa-p99-ms")
	b.ReportMetric(float64(rf3.latency.ValueAtQuantile(99))/1000, "rf3-p99-ms")
}
