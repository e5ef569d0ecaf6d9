package broker

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/exactly-eos/exactly/broker/producers"
	"github.com/exactly-eos/exactly/broker/txn"
	"github.com/exactly-eos/exactly/wire"
)

// Transactions on a partition (seed §3.2.2, KIP-98, KIP-890):
//
//   - Open transactions: a transactional batch opens its producer's
//     transaction on the partition at its first offset (producers'
//     currentTxnFirstOffset); a COMMIT or ABORT marker closes it. The last
//     stable offset (LSO) is the first offset of the oldest open
//     transaction, or the high watermark when none is open; read_committed
//     fetches and ListOffsets read up to it (partition.lastStable).
//   - Verification (KIP-890 part 1): a transactional batch is accepted only
//     if the coordinator says its producer id and epoch are current and the
//     partition is in the open transaction (under transaction version 2 and
//     Produce v12+, the partition is added then). The check runs outside
//     the append lock; a guard registered before it and removed by any
//     marker for the producer makes the append refuse a batch whose
//     transaction ended while it was being verified — the hanging
//     transaction Jepsen found in Kafka (a late batch opening a transaction
//     no marker will ever close).
//   - Markers (appendMarker, the WriteTxnMarkers path): checked against the
//     producer state (a marker older than the producer's epoch is stale and
//     skipped; one from an older coordinator epoch is refused), appended as
//     a control batch, applied to the producer state; an ABORT records
//     (producer id, first offset, marker offset, LSO) in the segment's
//     aborted-transaction index, which read_committed fetches return.
//   - Restart: the producer state (snapshot + replay, markers included)
//     restores the open transactions, hence the LSO; the aborted index is
//     storage's own file, recovered with the segments.

// verificationGuard marks one producer's verified (or verifying)
// transaction on a partition; compared by identity.
type verificationGuard struct{ _ byte }

// produceTxn is what the produce path knows about a request's transaction.
type produceTxn struct {
	broker *Broker
	// transactionalID is the request's transactional id; nil when null.
	transactionalID []byte
	version         int16
	ctx             context.Context
}

// refreshUnstable recomputes the oldest open transaction from the
// producer state and publishes the LSO (caller holds appendMu or owns the
// partition exclusively).
func (p *partition) refreshUnstable() {
	p.unstableOffset = -1
	if offset, ok := p.producers.FirstUnstableOffset(); ok {
		p.unstableOffset = offset
	}
	p.publishLastStable()
}

// beforeAbortedIndexAppend, set only by tests, runs between an ABORT
// marker's append and its aborted-index entry (appendMu held) with the
// partition's name; an error it returns stands for a failed index write.
// It lets tests act inside the window between the two steps.
var beforeAbortedIndexAppend atomic.Pointer[func(partition string) error]

// publishLastStable stores the LSO for lock-free readers (caller holds appendMu).
func (p *partition) publishLastStable() {
	if p.unstableOffset >= 0 {
		p.lastStable.Store(p.unstableOffset)
	} else {
		p.lastStable.Store(p.log.LogEndOffset())
	}
	p.assertInvariantsLocked()
}

// lastStableOffset is the partition's LSO, never above the high watermark.
func (p *partition) lastStableOffset() int64 {
	return min(p.lastStable.Load(), p.highWatermark())
}

// verifyTransactional checks a transactional batch with the transaction
// coordinator before it is appended (KIP-890) and returns the guard the
// append must still find in place.
func (p *partition) verifyTransactional(tx produceTxn, batch wire.BatchView) (*verificationGuard, error) {
	if tx.transactionalID == nil {
		return nil, fmt.Errorf("%w: transactional batch in a request without a transactional id", errInvalidRecord)
	}
	if tx.broker == nil || tx.broker.transactions == nil && !tx.broker.clusterGroups() {
		return nil, fmt.Errorf("%w: no transaction coordinator", errNoCoordinator)
	}
	producerID := batch.ProducerID()
	p.appendMu.Lock()
	guard := p.verifications[producerID]
	if guard == nil {
		guard = &verificationGuard{}
		p.verifications[producerID] = guard
	}
	p.appendMu.Unlock()
	err := tx.broker.verifyTransactionalBatch(tx, producerID, batch.ProducerEpoch(), p.topic.name, p.index)
	if err != nil {
		p.appendMu.Lock()
		if p.verifications[producerID] == guard {
			delete(p.verifications, producerID)
		}
		p.appendMu.Unlock()
		return nil, fmt.Errorf("%s: %w", p.name(), err)
	}
	return guard, nil
}

// checkGuard fails when the producer's transaction ended (a marker
// removed the guard) since the batch was verified (caller holds appendMu).
func (p *partition) checkGuard(producerID int64, guard *verificationGuard) error {
	if p.verifications[producerID] != guard {
		return fmt.Errorf("%w: %s: the transaction of producer %d ended while its batch was verified", errInvalidTxnState, p.name(), producerID)
	}
	return nil
}

// verifyTransactionalBatch asks the coordinator whether the producer's
// open transaction includes the partition; under transaction version 2 a
// Produce v12+ adds it (KIP-890 part 2) when it is not in yet. The
// coordinator's sentinels reach the Produce response through the error
// table (a fenced producer is INVALID_PRODUCER_EPOCH there).
func (b *Broker) verifyTransactionalBatch(tx produceTxn, producerID int64, epoch int16, topicName string, index int32) error {
	producer := txn.Producer{TransactionalID: string(tx.transactionalID), ProducerID: producerID, Epoch: epoch}
	partition := txn.TopicPartition{Topic: topicName, Partition: index}
	err := b.verifyWithCoordinator(tx.ctx, producer, partition)
	if errors.Is(err, errNoCoordinator) || errors.Is(err, txn.ErrCoordinatorClosed) || errors.Is(err, txn.ErrCoordinatorLoadInProgress) {
		// The coordinator could not be asked (it moves, or loads): as in
		// Kafka, a retriable NOT_ENOUGH_REPLICAS, which every client retries.
		return fmt.Errorf("%w: verification: %w", errNotEnoughReplicas, err)
	}
	if err == nil || !errors.Is(err, txn.ErrInvalidTxnState) || tx.version < 12 || b.transactionVersion < 2 {
		return err
	}
	err = b.addProducedPartition(tx.ctx, producer, partition)
	if errors.Is(err, errNoCoordinator) || errors.Is(err, txn.ErrCoordinatorClosed) || errors.Is(err, txn.ErrCoordinatorLoadInProgress) {
		return fmt.Errorf("%w: add to transaction: %w", errNotEnoughReplicas, err)
	}
	if err != nil {
		return fmt.Errorf("add %s to transaction %q: %w", partition, producer.TransactionalID, err)
	}
	return nil
}

// markerResult is the outcome of appendMarker.
type markerResult struct {
	// offset is the marker's offset; -1 when nothing was written.
	offset int64
}

// appendMarker writes a COMMIT or ABORT control batch for the producer and
// closes its open transaction on the partition, through the one append
// path as originMarker ([partition.appendLocked]: an ABORT's
// aborted-index entry is written there). A marker whose producer epoch is
// older than the partition's is stale (the transaction it ends was
// superseded) and is skipped without writing.
func (p *partition) appendMarker(producerID int64, producerEpoch int16, coordinatorEpoch int32, commit bool) (markerResult, error) {
	marker := producers.Marker{ProducerID: producerID, ProducerEpoch: producerEpoch, CoordinatorEpoch: coordinatorEpoch, Commit: commit}
	records := wire.BuildControlBatch(producerID, producerEpoch, commit, coordinatorEpoch, time.Now().UnixMilli())
	var scratch [1]batchInfo
	info, err := analyzeRecords(originMarker, records, 0, 0, scratch[:0])
	if err != nil {
		return markerResult{offset: -1}, fmt.Errorf("marker for %s: %w", p.name(), err)
	}
	outcome, err := p.append(originMarker, records, &info, &appendOptions{marker: marker})
	return markerResult{offset: outcome.lastOffset}, err
}
