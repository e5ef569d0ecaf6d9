package partition

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/exactly-eos/exactly/broker/producers"
	"github.com/exactly-eos/exactly/wire"
)

// Transactions on a partition (seed §3.2.2, KIP-98, KIP-890):
//
//   - Open transactions: a transactional batch opens its producer's
//     transaction on the partition at its first offset (producers'
//     currentTxnFirstOffset); a COMMIT or ABORT marker closes it. The last
//     stable offset (LSO) is the first offset of the oldest open
//     transaction, or the high watermark when none is open; read_committed
//     fetches and ListOffsets read up to it (Partition.lastStable).
//   - Verification (KIP-890 part 1): a transactional batch is accepted only
//     if the coordinator says its producer id and epoch are current and the
//     partition is in the open transaction (under transaction version 2 and
//     Produce v12+, the partition is added then). The check runs outside
//     the append lock; a guard registered before it and removed by any
//     marker for the producer makes the append refuse a batch whose
//     transaction ended while it was being verified — the hanging
//     transaction Jepsen found in Kafka (a late batch opening a transaction
//     no marker will ever close).
//   - Markers ([Partition.AppendMarker], the WriteTxnMarkers path): checked against the
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

// TxnVerifier is the transaction coordinator's side of a KIP-890
// verification, as a Produce request's transactional batch needs it
// ([Partition.AppendClient]); the broker implements it per request.
type TxnVerifier interface {
	// CanVerify reports why this request's transactional batches cannot be
	// verified at all (no transactional id, no coordinator), nil if they
	// can; it is asked before the partition registers its guard.
	CanVerify() error
	// VerifyTransactional asks the coordinator whether the producer's open
	// transaction includes topic-partition (and may add it, KIP-890 part
	// 2). It runs with no partition lock held; its error is the batch's.
	VerifyTransactional(producerID int64, producerEpoch int16, topic string, partition int32) error
}

// refreshUnstable recomputes the oldest open transaction from the
// producer state and publishes the LSO (caller holds appendMu or owns the
// partition exclusively).
func (p *Partition) refreshUnstable() {
	p.unstableOffset = -1
	if offset, ok := p.producers.FirstUnstableOffset(); ok {
		p.unstableOffset = offset
	}
	p.publishLastStable()
}

// BeforeAbortedIndexAppend, set only by tests, runs between an ABORT
// marker's append and its aborted-index entry (appendMu held) with the
// partition's name; an error it returns stands for a failed index write.
// It lets tests act inside the window between the two steps.
var BeforeAbortedIndexAppend atomic.Pointer[func(partition string) error]

// publishLastStable stores the LSO for lock-free readers (caller holds appendMu).
func (p *Partition) publishLastStable() {
	if p.unstableOffset >= 0 {
		p.lastStable.Store(p.unstableOffset)
	} else {
		p.lastStable.Store(p.log.LogEndOffset())
	}
	p.assertInvariantsLocked()
}

// LastStableOffset is the partition's LSO, never above the high watermark.
func (p *Partition) LastStableOffset() int64 {
	return min(p.lastStable.Load(), p.HighWatermark())
}

// verifyTransactional checks a transactional batch with the transaction
// coordinator (verifier) before it is appended (KIP-890) and returns the
// guard the append must still find in place.
func (p *Partition) verifyTransactional(verifier TxnVerifier, batch wire.BatchView) (*verificationGuard, error) {
	if verifier == nil {
		return nil, fmt.Errorf("%w: transactional batch with no transaction to verify it in", ErrInvalidRecord)
	}
	if err := verifier.CanVerify(); err != nil {
		return nil, err
	}
	producerID := batch.ProducerID()
	p.appendMu.Lock()
	guard := p.verifications[producerID]
	if guard == nil {
		guard = &verificationGuard{}
		p.verifications[producerID] = guard
	}
	p.appendMu.Unlock()
	err := verifier.VerifyTransactional(producerID, batch.ProducerEpoch(), p.topic, p.index)
	if err != nil {
		p.appendMu.Lock()
		if p.verifications[producerID] == guard {
			delete(p.verifications, producerID)
		}
		p.appendMu.Unlock()
		return nil, fmt.Errorf("%s: %w", p.Name(), err)
	}
	return guard, nil
}

// checkGuard fails when the producer's transaction ended (a marker
// removed the guard) since the batch was verified (caller holds appendMu).
func (p *Partition) checkGuard(producerID int64, guard *verificationGuard) error {
	if p.verifications[producerID] != guard {
		return fmt.Errorf("%w: %s: the transaction of producer %d ended while its batch was verified", ErrInvalidTxnState, p.Name(), producerID)
	}
	return nil
}

// AppendMarker writes a COMMIT or ABORT control batch for the producer and
// closes its open transaction on the partition, through the one append
// path as OriginMarker ([Partition.appendLocked]: an ABORT's
// aborted-index entry is written there). A marker whose producer epoch is
// older than the partition's is stale (the transaction it ends was
// superseded) and is skipped without writing. It returns the marker's
// offset, -1 when nothing was written.
func (p *Partition) AppendMarker(producerID int64, producerEpoch int16, coordinatorEpoch int32, commit bool) (int64, error) {
	marker := producers.Marker{ProducerID: producerID, ProducerEpoch: producerEpoch, CoordinatorEpoch: coordinatorEpoch, Commit: commit}
	records := wire.BuildControlBatch(producerID, producerEpoch, commit, coordinatorEpoch, time.Now().UnixMilli())
	var scratch [1]BatchInfo
	info, err := Analyze(OriginMarker, records, 0, 0, scratch[:0])
	if err != nil {
		return -1, fmt.Errorf("marker for %s: %w", p.Name(), err)
	}
	outcome, err := p.Append(OriginMarker, records, &info, &AppendOptions{Marker: marker})
	return outcome.LastOffset, err
}
