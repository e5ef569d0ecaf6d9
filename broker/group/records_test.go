package group

import (
	"bytes"
	"context"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/exactly-eos/exactly/broker/storage"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The offset commit key and value have Kafka's byte layout.
func TestOffsetRecordLayout(t *testing.T) {
	key := encodeOffsetKey(offsetKey{Group: "g1", Topic: "t", Partition: 258})
	wantKey := []byte{0, 1, 0, 2, 'g', '1', 0, 1, 't', 0, 0, 1, 2}
	if !bytes.Equal(key, wantKey) {
		t.Fatalf("offset key % x, want % x", key, wantKey)
	}
	value := encodeOffsetValue(offsetValue{Offset: 5, LeaderEpoch: -1, Metadata: "m", CommitTimestamp: 1})
	wantValue := []byte{0, 3, 0, 0, 0, 0, 0, 0, 0, 5, 0xff, 0xff, 0xff, 0xff, 0, 1, 'm', 0, 0, 0, 0, 0, 0, 0, 1}
	if !bytes.Equal(value, wantValue) {
		t.Fatalf("offset value % x, want % x", value, wantValue)
	}
	groupKey := encodeGroupKey("g1")
	if !bytes.Equal(groupKey, []byte{0, 2, 0, 2, 'g', '1'}) {
		t.Fatalf("group key % x", groupKey)
	}
	// Version 1 values (Kafka 2.0 and older with an explicit expiry) decode.
	v1 := []byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 8}
	decoded, err := decodeOffsetValue(v1)
	if err != nil || decoded != (offsetValue{Offset: 9, LeaderEpoch: -1, CommitTimestamp: 7}) {
		t.Fatalf("value v1: %+v, %v", decoded, err)
	}
}

func TestRecordRoundTripAndTruncation(t *testing.T) {
	protocol, leader, instance := "range", "m1", "i1"
	group := groupMetadataValue{
		ProtocolType: "consumer", Generation: 7, Protocol: &protocol, Leader: &leader, CurrentStateMillis: 1234,
		Members: []memberMetadataValue{
			{MemberID: "m1", InstanceID: &instance, ClientID: "c", ClientHost: "/h", RebalanceTimeout: 3, SessionTimeout: 4, Subscription: []byte{1}, Assignment: []byte{2, 3}},
			{MemberID: "m2", ClientID: "c2", Subscription: []byte{}, Assignment: []byte{}},
		},
	}
	encoded := encodeGroupValue(group)
	decoded, err := decodeGroupValue(encoded)
	if err != nil || !reflect.DeepEqual(decoded, group) {
		t.Fatalf("group value round trip: %+v, %v", decoded, err)
	}
	offset := offsetValue{Offset: 1 << 40, LeaderEpoch: 3, Metadata: "meta", CommitTimestamp: 99}
	key := offsetKey{Group: "g", Topic: "topic", Partition: 7}
	inputs := map[string][]byte{"group value": encoded, "offset value": encodeOffsetValue(offset), "offset key": encodeOffsetKey(key)}
	for name, raw := range inputs {
		for cut := range len(raw) {
			var err error
			switch name {
			case "group value":
				_, err = decodeGroupValue(raw[:cut])
			case "offset value":
				_, err = decodeOffsetValue(raw[:cut])
			default:
				_, err = decodeKey(raw[:cut])
			}
			if !errors.Is(err, errCorruptRecord) {
				t.Fatalf("%s truncated to %d bytes: got %v, want a corrupt-record error", name, cut, err)
			}
		}
	}
	gotKey, err := decodeKey(encodeOffsetKey(key))
	if err != nil || gotKey.Offset == nil || *gotKey.Offset != key {
		t.Fatalf("offset key round trip: %+v, %v", gotKey, err)
	}
	if _, err := decodeKey([]byte{0, 9, 0, 0}); !errors.Is(err, errCorruptRecord) {
		t.Fatalf("unknown key version: %v", err)
	}
}

// PartitionFor matches Kafka: abs(String.hashCode) % n with Utils.abs.
func TestPartitionFor(t *testing.T) {
	cases := []struct {
		group string
		want  int
	}{
		{"hello", 22}, // "hello".hashCode() = 99162322
		{"Aa", 12},    // 2112, equal to "BB"'s
		{"BB", 12},
		{"", 0},
		{"polygenelubricants", 0}, // hashCode is Integer.MIN_VALUE: Utils.abs gives 0
		{"my-group", 12},          // hashCode -1906497762: Math.abs, not & 0x7fffffff (36)
		{"\U0001F600", 49},        // one code point, two UTF-16 units: 1772899
	}
	for _, c := range cases {
		if got := PartitionFor(c.group, 50); got != c.want {
			t.Errorf("PartitionFor(%q, 50) = %d, want %d", c.group, got, c.want)
		}
	}
	if got := PartitionFor("hello", 0); got != 0 {
		t.Errorf("PartitionFor with no partitions = %d", got)
	}
}

// The log store writes real Kafka record batches: kmsg parses them and
// their CRC-32C checks out; transactional and control bits are set for
// TxnOffsetCommit batches and markers; tombstones have null values.
func TestLogStoreBatchesAreKafkaBatches(t *testing.T) {
	dir := t.TempDir()
	store, err := OpenLogStore(dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	plain := StoreBatch{ProducerID: -1, ProducerEpoch: -1, TimestampMillis: 1000, Records: []StoreRecord{
		{Key: encodeOffsetKey(offsetKey{Group: "g", Topic: "t", Partition: 0}), Value: encodeOffsetValue(offsetValue{Offset: 1})},
		{Key: encodeGroupKey("g")},
	}}
	transactional := StoreBatch{ProducerID: 17, ProducerEpoch: 2, Transactional: true, TimestampMillis: 1001, Records: plain.Records[:1]}
	marker := StoreBatch{ProducerID: 17, ProducerEpoch: 2, Transactional: true, Marker: &TxnMarker{Commit: true, CoordinatorEpoch: 4}, TimestampMillis: 1002}
	for _, batch := range []StoreBatch{plain, transactional, marker} {
		if err := store.Append(ctx, 3, batch); err != nil {
			t.Fatal(err)
		}
	}
	var replayed []StoreBatch
	if err := store.Replay(ctx, func(partition int32, batch StoreBatch) error {
		if partition != 3 {
			t.Fatalf("replayed partition %d", partition)
		}
		replayed = append(replayed, batch)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(replayed) != 3 || !reflect.DeepEqual(replayed[0].Records, plain.Records) || replayed[0].Records[1].Value != nil {
		t.Fatalf("replayed plain batch: %+v", replayed)
	}
	if !replayed[1].Transactional || replayed[1].ProducerID != 17 || replayed[1].ProducerEpoch != 2 {
		t.Fatalf("replayed transactional batch: %+v", replayed[1])
	}
	if replayed[2].Marker == nil || !replayed[2].Marker.Commit || replayed[2].Marker.CoordinatorEpoch != 4 {
		t.Fatalf("replayed marker: %+v", replayed[2])
	}
	log, err := store.openPartition(3)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := log.ReadBatches(0, log.LogEndOffset(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	wantAttributes := []int16{0, 0x10, 0x30}
	for i := 0; len(raw) > 0; i++ {
		var batch kmsg.RecordBatch
		if err := batch.ReadFrom(raw); err != nil {
			t.Fatalf("kmsg cannot parse batch %d: %v", i, err)
		}
		size := 12 + int(batch.Length)
		if crc := crc32.Checksum(raw[21:size], castagnoli); int32(crc) != batch.CRC {
			t.Fatalf("batch %d: CRC %08x, header says %08x", i, crc, uint32(batch.CRC))
		}
		if batch.Magic != 2 || batch.Attributes != wantAttributes[i] || batch.FirstOffset != int64(min(i*2, 3)) {
			t.Fatalf("batch %d: magic %d attributes %#x first offset %d", i, batch.Magic, batch.Attributes, batch.FirstOffset)
		}
		raw = raw[size:]
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	if err := store.Append(ctx, 3, plain); err == nil {
		t.Fatal("append after close succeeded")
	}
}

// TestLogStoreIndexesAbortedTransactions: an ABORT marker's transaction
// goes into the log's aborted-transaction index (the log cleaner reads it
// to drop the aborted offsets), a COMMIT's does not, and a replay puts
// back an entry a crash lost between the marker and the index.
func TestLogStoreIndexesAbortedTransactions(t *testing.T) {
	dir := t.TempDir()
	store, err := OpenLogStore(dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	record := []StoreRecord{{Key: encodeOffsetKey(offsetKey{Group: "g", Topic: "t", Partition: 0}), Value: encodeOffsetValue(offsetValue{Offset: 1})}}
	data := func(producer int64) StoreBatch {
		return StoreBatch{ProducerID: producer, Transactional: true, TimestampMillis: 1000, Records: record}
	}
	marker := func(producer int64, commit bool) StoreBatch {
		return StoreBatch{ProducerID: producer, Transactional: true, Marker: &TxnMarker{Commit: commit}, TimestampMillis: 1000}
	}
	// offsets: 0 data 5, 1 data 6, 2 data 5, 3 abort 5, 4 commit 6
	for _, batch := range []StoreBatch{data(5), data(6), data(5), marker(5, false), marker(6, true)} {
		if err := store.Append(ctx, 0, batch); err != nil {
			t.Fatal(err)
		}
	}
	want := []storage.AbortedTxn{{ProducerID: 5, FirstOffset: 0, LastOffset: 3, LastStableOffset: 1}}
	log := store.Logs()[0]
	if got := log.AbortedTxns(0, 10); !reflect.DeepEqual(got, want) {
		t.Fatalf("aborted index %+v, want %+v", got, want)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	indexes, err := filepath.Glob(filepath.Join(dir, "*", "*.txnindex"))
	if err != nil || len(indexes) != 1 {
		t.Fatalf("txnindex files %v, %v", indexes, err)
	}
	if err := os.Remove(indexes[0]); err != nil { // the crash
		t.Fatal(err)
	}
	store, err = OpenLogStore(dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := store.Replay(ctx, func(int32, StoreBatch) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if got := store.Logs()[0].AbortedTxns(0, 10); !reflect.DeepEqual(got, want) {
		t.Fatalf("aborted index after the replay %+v, want %+v", got, want)
	}
}
