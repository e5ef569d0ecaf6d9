package txn

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
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
	id := "bench"
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis = &id, 60000
	resp := c.InitProducerID(context.Background(), init)
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.Version, add.TransactionalID, add.ProducerID, add.ProducerEpoch = 3, id, resp.ProducerID, resp.ProducerEpoch
	add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "out", Partitions: []int32{0, 1, 2}}}
	end := kmsg.NewPtrEndTxnRequest()
	end.Version, end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = 3, id, resp.ProducerID, resp.ProducerEpoch, true
	b.ReportAllocs()
	for b.Loop() {
		if code := c.AddPartitionsToTxn(context.Background(), add).Topics[0].Partitions[0].ErrorCode; code != 0 {
			b.Fatalf("add: %d", code)
		}
		if code := c.EndTxn(context.Background(), end).ErrorCode; code != 0 {
			b.Fatalf("end: %d", code)
		}
	}
}
