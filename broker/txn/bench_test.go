package txn

import (
	"context"
	"testing"
)

// BenchmarkTransactionCycle measures AddPartitionsToTxn + EndTxn(commit),
// completion included, on the in-memory log with instant markers: the
// coordinator's own cost per transaction.
func BenchmarkTransactionCycle(b *testing.B) {
	clk := newClock()
	c, err := NewCoordinator(testConfig(clk), NewMemoryLog(), &sequentialIDs{}, &fakeMarkers{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	got, err := c.InitProducerID(context.Background(), InitRequest{TransactionalID: "bench", TimeoutMs: 60000})
	if err != nil {
		b.Fatal(err)
	}
	producer := Producer{TransactionalID: "bench", ProducerID: got.ProducerID, Epoch: got.Epoch}
	partitions := []TopicPartition{{Topic: "out", Partition: 0}, {Topic: "out", Partition: 1}, {Topic: "out", Partition: 2}}
	b.ReportAllocs()
	for b.Loop() {
		if err := c.AddPartitions(context.Background(), producer, partitions)[0]; err != nil {
			b.Fatalf("add: %v", err)
		}
		if _, err := c.EndTxn(context.Background(), EndRequest{Producer: producer, Commit: true}); err != nil {
			b.Fatalf("end: %v", err)
		}
	}
}
