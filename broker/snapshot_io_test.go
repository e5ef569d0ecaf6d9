package broker

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/broker/producers"
	"github.com/exactly-eos/exactly/wire"
)

// sequencedBatch is one 1 KiB record of producer id at sequence.
func sequencedBatch(t *testing.T, producerID int64, sequence int32) []byte {
	t.Helper()
	options := wire.PlainBatchOptions()
	options.ProducerID, options.ProducerEpoch, options.BaseSequence = producerID, 0, sequence
	record := wire.BuilderRecord{TimestampMillis: time.Now().UnixMilli(), Value: make([]byte, 1024)}
	batch, err := wire.BuildBatch(options, []wire.BuilderRecord{record})
	if err != nil {
		t.Fatal(err)
	}
	return batch
}

// The producer snapshot an append takes when it rolls a segment is
// written after the append lock is released: while its file is being
// renamed into place, other producers' appends to the same partition go
// through, and the snapshot is on disk once the rolling append returns.
func TestRollSnapshotDoesNotBlockAppends(t *testing.T) {
	t.Parallel()
	fsys := &gatedFS{suffix: ".snapshot"}
	b := startBrokerWithFS(t, fsys)
	topic := controllerCreateTopic(t, b, "rolled", 1, map[string]string{"segment.bytes": "3000"})
	p, err := b.partitionOf(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	for sequence := range int32(2) {
		if _, err := p.AppendProduced(sequencedBatch(t, 7, sequence), produceTxn{}); err != nil {
			t.Fatal(err)
		}
	}
	release := fsys.closeGate(t)
	rolled := make(chan error, 1)
	go func() { // a third 1 KiB batch does not fit in 3000 bytes: it rolls
		_, err := p.AppendProduced(sequencedBatch(t, 7, 2), produceTxn{})
		rolled <- err
	}()
	<-fsys.reached // the roll's snapshot is being renamed into place
	withinSeconds(t, "an append of another producer", func() {
		if result, err := p.AppendProduced(sequencedBatch(t, 8, 0), produceTxn{}); err != nil || result.FirstOffset != 3 {
			t.Errorf("append during the snapshot write: %+v, %v", result, err)
		}
	})
	release()
	if err := <-rolled; err != nil {
		t.Fatalf("rolling append: %v", err)
	}
	if _, err := os.Stat(filepath.Join(p.SnapshotDir(), producers.SnapshotFileName(2))); err != nil {
		t.Fatalf("the roll's snapshot at offset 2 is not on disk: %v", err)
	}
}
