package broker

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/partition"
)

// The two steps of writing an ABORT marker — the control batch in the log,
// then the transaction's entry in the aborted index — with a reader or a
// crash between them. The first version of the broker published the last
// stable offset between the two, and a read_committed fetch in that window
// returned the aborted records as committed: under consumer-group churn,
// exactly-once pipelines copied aborted input into their committed output
// (franz-go's TestTxnEtl found ~1,000 duplicates in 25,000 records).

// setAbortIndexHook installs hook for the partition named name only
// (other tests' brokers in the process are left alone) until the test ends.
func setAbortIndexHook(t *testing.T, name string, hook func() error) {
	t.Helper()
	wrapped := func(partitionName string) error {
		if partitionName != name {
			return nil
		}
		return hook()
	}
	partition.BeforeAbortedIndexAppend.Store(&wrapped)
	t.Cleanup(func() { partition.BeforeAbortedIndexAppend.Store(nil) })
}

// leakedAbortedRecords decodes a read_committed Fetch response for one
// partition and counts data records that the response does not mark as
// aborted: records of a transactional batch whose producer has an aborted
// transaction starting at or before the batch are dropped by clients, all
// others are delivered. Every record the test wrote was aborted, so each
// delivered one is a leak.
func leakedAbortedRecords(resp *kmsg.FetchResponse) (int, error) {
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return 0, fmt.Errorf("fetch answered %d topics", len(resp.Topics))
	}
	partition := resp.Topics[0].Partitions[0]
	if partition.ErrorCode != 0 {
		return 0, fmt.Errorf("fetch error code %d", partition.ErrorCode)
	}
	leaked := 0
	for raw := partition.RecordBatches; len(raw) > 0; {
		var batch kmsg.RecordBatch
		if err := batch.ReadFrom(raw); err != nil {
			return 0, fmt.Errorf("decode batch: %w", err)
		}
		raw = raw[12+int(batch.Length):]
		if batch.Attributes&0x20 != 0 { // control batch
			continue
		}
		covered := false
		for _, aborted := range partition.AbortedTransactions {
			if aborted.ProducerID == batch.ProducerID && aborted.FirstOffset <= batch.FirstOffset {
				covered = true
			}
		}
		if !covered {
			leaked += int(batch.NumRecords)
		}
	}
	return leaked, nil
}

// topicIDOf asks Metadata for a topic's id.
func topicIDOf(t *testing.T, client *kgo.Client, name string) [16]byte {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	topic := kmsg.NewMetadataRequestTopic()
	topic.Topic = kmsg.StringPtr(name)
	req.Topics = append(req.Topics, topic)
	resp, err := req.RequestWith(testContext(t, 10*time.Second), client)
	if err != nil || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("metadata of %s: %v %+v", name, err, resp)
	}
	return resp.Topics[0].TopicID
}

// TestReadCommittedFetchBetweenAbortMarkerAndIndex fetches read_committed
// inside the window between an ABORT marker's append and its index entry:
// the fetch must not be able to return the aborted records.
func TestReadCommittedFetchBetweenAbortMarkerAndIndex(t *testing.T) {
	for _, tv := range transactionVersions {
		t.Run(tv.name, func(t *testing.T) {
			b := startTestBroker(t, t.TempDir(), txnTestProperties(tv.version))
			admin := newTestClient(t, b)
			createTopic(t, admin, "abort-window", 1, nil)
			reader := newTestClient(t, b)
			topicID := topicIDOf(t, reader, "abort-window")

			fetched := make(chan error, 4)
			setAbortIndexHook(t, partitionDirName("abort-window", 0), func() error {
				req := kmsg.NewPtrFetchRequest()
				req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 0, 0, 1<<20
				req.IsolationLevel = 1 // read_committed
				topic := kmsg.NewFetchRequestTopic()
				topic.Topic, topic.TopicID = "abort-window", topicID // v13+ name topics by id
				partition := kmsg.NewFetchRequestTopicPartition()
				partition.Partition, partition.FetchOffset, partition.PartitionMaxBytes = 0, 0, 1<<20
				partition.LogStartOffset = -1
				topic.Partitions = append(topic.Partitions, partition)
				req.Topics = append(req.Topics, topic)
				raw, err := req.RequestWith(testContext(t, 10*time.Second), reader)
				if err != nil {
					fetched <- fmt.Errorf("fetch inside the window: %w", err)
					return nil
				}
				leaked, err := leakedAbortedRecords(raw)
				if err == nil && leaked > 0 {
					err = fmt.Errorf("a read_committed fetch between the ABORT marker and its index entry returned %d aborted records", leaked)
				}
				fetched <- err
				return nil
			})

			producer := newTxnProducer(t, b.Addr(), "abort-window-"+tv.name)
			var records []*kgo.Record
			for i := range 5 {
				records = append(records, &kgo.Record{Topic: "abort-window", Value: fmt.Appendf(nil, "aborted-%d", i)})
			}
			if err := runTransaction(testContext(t, 20*time.Second), producer, records, false); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-fetched:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the ABORT marker was never written (hook did not run)")
			}
			writeSentinels(t, b.Addr(), []string{"abort-window"}, 1)
			if values := consumeToSentinels(t, b.Addr(), []string{"abort-window"}, 1, kgo.ReadCommitted()); len(values["abort-window"]) != 0 {
				t.Fatalf("read_committed after the abort returned %v", values["abort-window"])
			}
		})
	}
}

// TestAbortIndexRestoredAfterCrashBetweenMarkerAndIndex stops the broker
// after an ABORT marker reached the log but before its index entry did (the
// index write fails, as a crash at that point leaves it), then restarts it:
// recovery must put the entry back, so read_committed readers still skip
// the aborted records.
func TestAbortIndexRestoredAfterCrashBetweenMarkerAndIndex(t *testing.T) {
	dir := t.TempDir()
	properties := txnTestProperties("2")
	b := startTestBroker(t, dir, properties)
	admin := newTestClient(t, b)
	createTopic(t, admin, "abort-crash", 1, nil)

	indexWrites := make(chan struct{}, 16)
	setAbortIndexHook(t, partitionDirName("abort-crash", 0), func() error {
		indexWrites <- struct{}{}
		return errors.New("injected: crash before the aborted index entry")
	})
	producer := newTxnProducer(t, b.Addr(), "abort-crash")
	var records []*kgo.Record
	for i := range 5 {
		records = append(records, &kgo.Record{Topic: "abort-crash", Value: fmt.Appendf(nil, "aborted-%d", i)})
	}
	// EndTxn answers once the abort is decided; the marker may still be
	// on its way, so wait for the hook (it runs after the marker's append).
	if err := runTransaction(testContext(t, 20*time.Second), producer, records, false); err != nil {
		t.Fatal(err)
	}
	select {
	case <-indexWrites:
	case <-time.After(20 * time.Second):
		t.Fatal("the ABORT marker was never written (hook did not run)")
	}
	producer.Close()
	if err := b.Close(); err != nil {
		t.Logf("close after the injected failure: %v", err)
	}
	partition.BeforeAbortedIndexAppend.Store(nil)

	restarted := startTestBroker(t, dir, properties)
	writeSentinels(t, restarted.Addr(), []string{"abort-crash"}, 1)
	if values := consumeToSentinels(t, restarted.Addr(), []string{"abort-crash"}, 1, kgo.ReadCommitted()); len(values["abort-crash"]) != 0 {
		t.Fatalf("read_committed after restart returned the aborted records %v", values["abort-crash"])
	}
	uncommitted := consumeToSentinels(t, restarted.Addr(), []string{"abort-crash"}, 1, kgo.ReadUncommitted())
	if len(uncommitted["abort-crash"]) != len(records) {
		t.Fatalf("read_uncommitted after restart returned %d records, want the %d aborted ones", len(uncommitted["abort-crash"]), len(records))
	}
}
