package txn

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/broker/storage"
	"github.com/exactly-eos/exactly/wire"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Java's String.hashCode, reproduced: known values, including the string
// whose hash is Integer.MIN_VALUE (Utils.abs maps it to 0).
func TestPartitionForMatchesJava(t *testing.T) {
	for _, tc := range []struct {
		id         string
		partitions int
		want       int
	}{
		{"a", 50, 97 % 50},                   // "a".hashCode() = 97
		{"hello", 50, 99162322 % 50},         // 99162322
		{"Aa", 50, 2112 % 50},                // 2112, same as "BB"
		{"polygenelubricants", 50, 0},        // Integer.MIN_VALUE
		{"hello world", 50, 1794106052 % 50}, // 1794106052
		{"x", 0, 0},
	} {
		if got := PartitionFor(tc.id, tc.partitions); got != tc.want {
			t.Errorf("PartitionFor(%q, %d) = %d, want %d", tc.id, tc.partitions, got, tc.want)
		}
	}
	// A supplementary character is two UTF-16 units.
	var h int32
	for _, u := range []int32{0xD83D, 0xDE00} {
		h = 31*h + u
	}
	if h < 0 {
		h = -h
	}
	if got := PartitionFor("😀", 1000); got != int(h%1000) {
		t.Errorf("surrogate pair: %d, want %d", got, h%1000)
	}
}

// Keys and values round-trip, match Kafka's layout byte for byte in the
// fixed part, and decode from Kafka's version 0 values.
func TestRecordFormat(t *testing.T) {
	key := encodeKey("tx")
	if want := []byte{0, 0, 0, 2, 't', 'x'}; !bytes.Equal(key, want) {
		t.Fatalf("key bytes %v, want %v", key, want)
	}
	m := Metadata{TransactionalID: "tx", ProducerID: 0x0102030405060708, ProducerEpoch: 3, LastProducerEpoch: 2,
		PreviousProducerID: 9, NextProducerID: -1, TimeoutMs: 60000, State: StatePrepareCommit,
		Partitions: []TopicPartition{tp("__consumer_offsets", 4), tp("a", 0), tp("a", 7)}, Groups: []string{"g1", "g2"},
		StartTime: 1000, LastUpdate: 2000, TransactionVersion: 2}
	value := encodeValue(&m)
	fixed := []byte{0, 1, 1, 2, 3, 4, 5, 6, 7, 8, 0, 3, 0, 0, 0xea, 0x60, 2}
	if !bytes.Equal(value[:len(fixed)], fixed) {
		t.Fatalf("value prefix % x, want % x", value[:len(fixed)], fixed)
	}
	decoded, err := decodeValue("tx", value)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(decoded, m) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", decoded, m)
	}
	// kmsg (franz-go's reading of Kafka's schema) reads what we write.
	var kv kmsg.TxnMetadataValue
	if err := kv.ReadFrom(value); err != nil || kv.ProducerID != m.ProducerID || len(kv.Topics) != 2 || kv.PreviousProducerID != 9 {
		t.Fatalf("kmsg read: %+v %v", kv, err)
	}
	// A version 0 value as Kafka 0.11–3.x writes it.
	v0 := kmsg.NewTxnMetadataValue()
	v0.Version = 0
	v0.ProducerID, v0.ProducerEpoch, v0.TimeoutMillis, v0.State = 5, 1, 1000, kmsg.TransactionState(StateOngoing)
	v0.Topics = []kmsg.TxnMetadataValueTopic{{Topic: "t", Partitions: []int32{2, 1}}}
	v0.LastUpdateTimestamp, v0.StartTimestamp = 20, 10
	old, err := decodeValue("tx", v0.AppendTo(nil))
	if err != nil || old.State != StateOngoing || len(old.Partitions) != 2 || old.Partitions[0] != tp("t", 1) || old.StartTime != 10 {
		t.Fatalf("v0: %+v %v", old, err)
	}
	for name, bad := range map[string][]byte{
		"short":       {0},
		"version 9":   {0, 9, 0, 0},
		"truncated":   value[:20],
		"epoch fence": encodeValue(&Metadata{State: StatePrepareEpochFence}),
	} {
		if _, err := decodeValue("tx", bad); !errors.Is(err, ErrCorruptRecord) {
			t.Errorf("%s: %v, want ErrCorruptRecord", name, err)
		}
	}
	if _, err := decodeKey([]byte{0, 1, 0, 0}); !errors.Is(err, ErrCorruptRecord) {
		t.Errorf("key version 1: %v", err)
	}
}

// The storage-backed log: records land in PartitionFor's partition as real
// record batches, survive a reopen, and a coordinator on the reopened log
// completes a transaction left in PrepareCommit.
func TestStorageLog(t *testing.T) {
	dir := t.TempDir()
	options := storage.Options{Fsync: storage.FsyncPolicy{Mode: storage.FsyncAlways}}
	cfg := testConfig(newClock())
	cfg.CompletionWait = -1
	ids := []string{"alpha", "beta", "gamma"}
	producers := writeStorageTransactions(t, dir, options, cfg, ids)

	reopened, err := OpenStorageLog(dir, 5, options)
	if err != nil {
		t.Fatal(err)
	}
	defer reopened.Close()
	markers := &fakeMarkers{}
	c, err := NewCoordinator(cfg, reopened, &sequentialIDs{next: 5000}, markers, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	calls := markers.succeeded()
	if len(calls) != 1 || !calls[0].Commit || calls[0].ProducerID != producers[1].pid {
		t.Fatalf("markers after reopen: %+v", calls)
	}
	var states []Metadata
	for _, id := range ids {
		m, err := c.DescribeTransaction(id)
		if err != nil {
			t.Fatal(err)
		}
		states = append(states, m)
	}
	if states[0].State != StateOngoing || states[1].State != StateCompleteCommit || states[2].State != StateOngoing ||
		states[0].ProducerID != producers[0].pid {
		t.Fatalf("after reopen: %+v", states)
	}
}

// writeStorageTransactions opens a 5-partition StorageLog in dir, opens a
// transaction for each id, commits the second one while every marker
// write fails (so it stays in PrepareCommit), closes everything, and
// checks each partition holds valid batches of its own ids only.
func writeStorageTransactions(t *testing.T, dir string, options storage.Options, cfg Config, ids []string) []producer {
	t.Helper()
	log, err := OpenStorageLog(dir, 5, options)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCoordinator(cfg, log, &sequentialIDs{}, &fakeMarkers{failures: 1 << 30}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var producers []producer
	for _, id := range ids {
		got, err := c.InitProducerID(context.Background(), InitRequest{TransactionalID: id, TimeoutMs: 60000})
		if err != nil {
			t.Fatalf("init %s: %v", id, err)
		}
		p := producer{id: id, pid: got.ProducerID, epoch: got.Epoch}
		producers = append(producers, p)
		if err := c.AddPartitions(context.Background(), p.typed(), []TopicPartition{{Topic: "out", Partition: 0}})[0]; err != nil {
			t.Fatalf("add %s: %v", id, err)
		}
	}
	if _, err := c.EndTxn(context.Background(), EndRequest{Producer: producers[1].typed(), Commit: true}); err != nil {
		t.Fatalf("end: %v", err)
	}
	c.Close()
	for p, partition := range log.Partitions() {
		err := loadPartition(partition, func(key, _ []byte) error {
			id, err := decodeKey(key)
			if err == nil && PartitionFor(id, 5) != p {
				t.Errorf("%q in partition %d, want %d", id, p, PartitionFor(id, 5))
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		data, err := partition.ReadBatches(partition.LogStartOffset(), partition.LogEndOffset(), 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		for len(data) > 0 {
			batch, err := wire.ParseBatch(data)
			if err != nil || batch.Validate() != nil || batch.ProducerID() != -1 {
				t.Fatalf("partition %d: bad batch: %v", p, err)
			}
			data = data[batch.Size():]
		}
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	return producers
}

// The hand-written codec writes exactly the bytes franz-go's kmsg (its
// reading of Kafka's schema) writes for the same key and value, and reads
// what kmsg writes, tags included.
func TestRecordCodecMatchesKmsg(t *testing.T) {
	key := kmsg.TxnMetadataKey{Version: 0, TransactionalID: "app-ü"}
	if got, want := encodeKey("app-ü"), key.AppendTo(nil); !bytes.Equal(got, want) {
		t.Fatalf("key % x, kmsg % x", got, want)
	}
	for name, m := range map[string]Metadata{
		"empty": {TransactionalID: "tx", ProducerID: 7, ProducerEpoch: -1, LastProducerEpoch: -1, PreviousProducerID: -1,
			NextProducerID: -1, TimeoutMs: 1000, State: StateEmpty, StartTime: -1, LastUpdate: 5},
		"every field": {TransactionalID: "tx", ProducerID: 1 << 40, ProducerEpoch: 300, LastProducerEpoch: 299,
			PreviousProducerID: 3, NextProducerID: 1<<40 + 1, TimeoutMs: 60000, State: StatePrepareAbort,
			Partitions: []TopicPartition{tp("__consumer_offsets", 49), tp("a", 0), tp("a", 1), tp("b", 130)},
			Groups:     []string{"g"}, StartTime: 1, LastUpdate: 2, TransactionVersion: 2},
	} {
		value := kmsg.NewTxnMetadataValue()
		value.Version = 1
		value.ProducerID, value.ProducerEpoch, value.TimeoutMillis = m.ProducerID, m.ProducerEpoch, m.TimeoutMs
		value.State = kmsg.TransactionState(m.State)
		value.Topics = []kmsg.TxnMetadataValueTopic{}
		for _, p := range m.Partitions {
			if last := len(value.Topics) - 1; last < 0 || value.Topics[last].Topic != p.Topic {
				value.Topics = append(value.Topics, kmsg.TxnMetadataValueTopic{Topic: p.Topic})
			}
			value.Topics[len(value.Topics)-1].Partitions = append(value.Topics[len(value.Topics)-1].Partitions, p.Partition)
		}
		value.LastUpdateTimestamp, value.StartTimestamp = m.LastUpdate, m.StartTime
		value.PreviousProducerID, value.NextProducerID, value.ClientTransactionVersion = m.PreviousProducerID, m.NextProducerID, m.TransactionVersion
		if len(m.Groups) > 0 {
			value.UnknownTags.Set(tagGroups, encodeGroups(m.Groups))
		}
		if m.LastProducerEpoch != noProducerEpoch {
			value.UnknownTags.Set(tagLastProducerEpoch, []byte{byte(uint16(m.LastProducerEpoch) >> 8), byte(m.LastProducerEpoch)})
		}
		want := value.AppendTo(nil)
		if got := encodeValue(&m); !bytes.Equal(got, want) {
			t.Errorf("%s: value\n % x\nkmsg\n % x", name, got, want)
		}
		decoded, err := decodeValue("tx", want)
		if err != nil || !reflect.DeepEqual(decoded, m) {
			t.Errorf("%s: decoding kmsg's bytes: %+v %v", name, decoded, err)
		}
	}
}
