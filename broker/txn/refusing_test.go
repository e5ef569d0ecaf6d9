package txn

import (
	"context"
	"errors"
	"testing"
)

// TestRefusingCoordinator: a coordinator made by NewRefusingCoordinator
// answers every call with its sentinel — InitProducerId before its
// timeout check (it has no settings) — and verification never passes.
func TestRefusingCoordinator(t *testing.T) {
	for _, sentinel := range []error{ErrCoordinatorClosed, ErrCoordinatorLoadInProgress} {
		c := NewRefusingCoordinator(sentinel)
		ctx := context.Background()
		producer := Producer{TransactionalID: "t", ProducerID: 1, Epoch: 0}
		partition := TopicPartition{Topic: "a", Partition: 0}
		check := func(what string, err error) {
			t.Helper()
			if !errors.Is(err, sentinel) {
				t.Errorf("%s: %v, want %v", what, err, sentinel)
			}
		}
		_, err := c.InitProducerID(ctx, InitRequest{TransactionalID: "t", TimeoutMs: 1 << 30})
		check("InitProducerID", err)
		check("AddPartitions", c.AddPartitions(ctx, producer, []TopicPartition{partition})[0])
		check("AddOffsets", c.AddOffsets(ctx, producer, "g"))
		_, err = c.EndTxn(ctx, EndRequest{Producer: producer, Commit: true})
		check("EndTxn", err)
		check("VerifyPartition", c.VerifyPartition(producer, partition))
		check("VerifyPartitions", c.VerifyPartitions(producer, []TopicPartition{partition})[0])
		_, err = c.DescribeTransaction("t")
		check("DescribeTransaction", err)
		_, err = c.ListTransactions(ListFilter{})
		check("ListTransactions", err)
	}
}
