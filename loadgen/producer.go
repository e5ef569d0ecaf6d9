package loadgen

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/verify"
	"github.com/exactly-eos/exactly/loadgen/worker"
)

// producer is one load-producing client. Its run method is called on one
// goroutine, which owns every field except those noted; the promise runs on
// kgo's callback goroutine and touches only log, metrics and txnErrors.
type producer struct {
	id         uint32
	client     *kgo.Client
	log        recordLog   // shared with promise (it locks)
	metrics    *runMetrics // shared (atomics, locked)
	runID      uint64
	topic      string
	recordSize int
	keys       keyChooser
	pacer      pacer
	// created holds, at a fixed rate, when each record still awaiting
	// its outcome was handed to the client (its uncorrected send time);
	// nil when unpaced. Shared with promise (it locks).
	created  *creationTimes
	budget   uint64    // records this producer may send
	deadline time.Time // no send after this
	next     uint64    // next sequence

	// transactional settings (transactional producers only)
	commitInterval time.Duration
	commitRecords  int
	abortShare     float64
	random         *rand.Rand
	// txnErrors counts promise errors in the open transaction; the
	// producer goroutine resets it at each Begin.
	txnErrors atomic.Int64
	// uniqueKeys: every record's key is p<id>-<sequence> (a mode whose
	// consumer recognises copies by their key).
	uniqueKeys bool
	// writer names the client's transactional id and whether its acks
	// carry offsets (not with acks=0); the first promise sets it.
	writer struct {
		once            sync.Once
		transactionalID string
		offsets         bool
	}
}

// ackOf is where the cluster said it wrote record, and by whom.
func (p *producer) ackOf(record *kgo.Record) verify.Ack {
	p.writer.once.Do(func() {
		p.writer.transactionalID, _ = p.client.OptValue(kgo.TransactionalID).(string)
		acks, _ := p.client.OptValue(kgo.RequiredAcks).(kgo.Acks)
		p.writer.offsets = acks != kgo.NoAck() // acks=0 reports made-up offsets
	})
	at := verify.Ack{Partition: record.Partition, Offset: record.Offset,
		Writer: verify.Writer{TransactionalID: p.writer.transactionalID, ProducerID: record.ProducerID, ProducerEpoch: record.ProducerEpoch}}
	if !p.writer.offsets {
		at.Offset = verify.UnknownOffset
	}
	return at
}

// running reports whether the producer may send another record.
func (p *producer) running(ctx context.Context) bool {
	return p.next < p.budget && ctx.Err() == nil && time.Now().Before(p.deadline) && !p.metrics.stopped.Load()
}

// send hands the next record to the client. Produce blocks while the
// client's buffer is full, so a producer at maximum rate runs at the pace of
// acknowledgements.
//
// The header's SendTime is the record's scheduled send time at a fixed
// rate (due, from the pacer; see sendTimeOf), so every latency measured
// from it counts the time the producer fell behind its schedule.
func (p *producer) send(ctx context.Context, due time.Time, fate verify.Fate) error {
	seq := p.next
	p.next++
	if err := p.log.RecordSent(seq, fate); err != nil {
		return err
	}
	p.metrics.recordSent()
	now := time.Now()
	p.created.note(seq, now)
	value := verify.NewValue(verify.Header{
		RunID: p.runID, Producer: p.id, Sequence: seq, SendTime: sendTimeOf(due, now).UnixNano(), Fate: fate,
	}, p.recordSize)
	key := p.keys.next()
	if p.uniqueKeys {
		key = uniqueKey(p.id, seq)
	}
	p.client.Produce(ctx, &kgo.Record{Topic: p.topic, Key: key, Value: value}, p.promise)
	return nil
}

// promise logs the outcome of one record.
func (p *producer) promise(record *kgo.Record, err error) {
	header, decodeErr := verify.DecodeHeader(record.Value)
	if decodeErr != nil {
		return // not ours: cannot happen, the producer wrote the value
	}
	created, paced := p.created.take(header.Sequence)
	if err != nil {
		p.log.RecordErrored(header.Sequence)
		p.metrics.recordError(err)
		p.metrics.recordFailed()
		p.txnErrors.Add(1)
		return
	}
	p.log.RecordAcknowledged(header.Sequence, p.ackOf(record))
	p.metrics.recordAck(ackTimes{sent: time.Unix(0, header.SendTime), created: created, paced: paced}, time.Now(), len(record.Value))
}

// runPlain sends records until the budget, the deadline or ctx ends, then
// waits for every outcome.
func (p *producer) runPlain(ctx context.Context) error {
	for p.running(ctx) {
		due, err := p.pacer.wait(ctx)
		if err != nil {
			break
		}
		if err := p.send(ctx, due, verify.FateCommit); err != nil {
			return err
		}
	}
	return p.flush(ctx)
}

// flush waits for every buffered record's outcome. A flush cut short by ctx
// leaves records without outcome; closing the client then fails them.
func (p *producer) flush(ctx context.Context) error {
	if err := p.client.Flush(ctx); err != nil {
		return fmt.Errorf("producer %d flush: %w", p.id, err)
	}
	return nil
}

// runTransactional sends records in transactions of commitInterval (or
// commitRecords), aborting a share of them, until the budget, the deadline
// or ctx ends.
func (p *producer) runTransactional(ctx context.Context) error {
	for p.running(ctx) {
		if err := p.client.BeginTransaction(); err != nil {
			p.metrics.recordError(err)
			return fmt.Errorf("producer %d begin transaction: %w", p.id, err)
		}
		p.txnErrors.Store(0)
		fate := verify.FateCommit
		if p.random.Float64() < p.abortShare {
			fate = verify.FateAbort
		}
		first := p.next
		ends := time.Now().Add(p.commitInterval)
		for sent := 0; p.running(ctx) && time.Now().Before(ends) && (p.commitRecords == 0 || sent < p.commitRecords); sent++ {
			due, err := p.pacer.wait(ctx)
			if err != nil {
				break
			}
			if err := p.send(ctx, due, fate); err != nil {
				return err
			}
		}
		if err := p.endTransaction(ctx, first, fate); err != nil {
			return err
		}
	}
	return nil
}

// endTransaction flushes the open transaction's records, then commits it if
// fate says so and every record was acknowledged, else aborts it, and logs
// the outcome for records [first, p.next).
func (p *producer) endTransaction(ctx context.Context, first uint64, fate verify.Fate) error {
	flushErr := p.client.Flush(ctx)
	commit := fate == verify.FateCommit && flushErr == nil && p.txnErrors.Load() == 0
	// EndTransaction is not cancelled with ctx: a cancelled EndTxn leaves the
	// outcome unknown. It is bounded by the client's request timeouts.
	endCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	p.log.TransactionEnding(first, p.next)
	started := time.Now()
	err := p.client.EndTransaction(endCtx, kgo.TransactionEndTry(commit))
	took := time.Since(started)
	if first == p.next && err == nil {
		return flushErr // an empty transaction: nothing was added, nothing sent
	}
	switch {
	case err != nil:
		p.metrics.recordError(err)
		p.metrics.recordTransactionEnd(false, false, took)
		outcome := verify.TransactionUnknown
		if !commit {
			outcome = verify.TransactionAborted // an abort that errors is aborted on timeout
		}
		p.log.RecordTransactionEnd(first, p.next, outcome)
		// No retry with TryAbort here, although kgo documents it for an
		// unconfirmed end: it reloads the producer id with an
		// InitProducerId naming the old epoch, and a coordinator (Kafka's
		// too) fences the open transaction of whoever holds the id now.
		// Run by a zombie (zombie-producer), that fenced its successor.
		return fmt.Errorf("producer %d end transaction (commit=%v): %w", p.id, commit, err)
	case commit:
		p.log.RecordTransactionEnd(first, p.next, verify.TransactionCommitted)
	default:
		p.log.RecordTransactionEnd(first, p.next, verify.TransactionAborted)
	}
	p.metrics.recordTransactionEnd(commit, !commit, took)
	if flushErr != nil {
		return fmt.Errorf("producer %d flush: %w", p.id, flushErr)
	}
	return nil
}

// recordLog is where a producer logs what it learns of each record: the
// run's ledger (verify.TrackedLog) in process, the report stream of a
// worker (its Reporter, or a load worker's RecordStream).
type recordLog = worker.RecordLog

// pacer spaces sends to a target rate. The zero pacer does not wait.
type pacer struct {
	interval time.Duration // 0: no pacing
	next     time.Time
}

func newPacer(recordsPerSecond float64, start time.Time) pacer {
	if recordsPerSecond <= 0 {
		return pacer{}
	}
	return pacer{interval: time.Duration(float64(time.Second) / recordsPerSecond), next: start}
}

// wait returns when the next record is due, and the time it was due by
// the schedule (zero when unpaced). It sleeps only when at least a
// millisecond ahead, so high rates are kept on average, not per record.
// A producer that fell behind gets due times in the past and does not
// wait: the schedule does not move with it, so its records' latencies,
// counted from their due times, include the delay (no coordinated
// omission).
func (p *pacer) wait(ctx context.Context) (time.Time, error) {
	if p.interval == 0 {
		return time.Time{}, nil
	}
	due := p.next
	p.next = p.next.Add(p.interval)
	ahead := time.Until(due)
	if ahead < time.Millisecond {
		return due, nil
	}
	timer := time.NewTimer(ahead)
	defer timer.Stop()
	select {
	case <-timer.C:
		return due, nil
	case <-ctx.Done():
		return due, ctx.Err()
	}
}

// paced reports whether the pacer keeps a schedule.
func (p *pacer) paced() bool { return p.interval > 0 }

// keyChooser draws record keys from the workload's distribution. It is
// owned by one producer goroutine.
type keyChooser struct {
	distribution string
	space        uint64
	random       *rand.Rand
	zipf         *rand.Zipf
}

func newKeyChooser(spec KeySpec, seed uint64) keyChooser {
	random := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	chooser := keyChooser{distribution: spec.Distribution, space: uint64(max(spec.Space, 1)), random: random}
	if spec.Distribution == "zipf" {
		chooser.zipf = rand.NewZipf(random, 1.1, 1, chooser.space-1)
	}
	return chooser
}

// next returns a key, or nil for the "none" distribution.
func (k *keyChooser) next() []byte {
	var index uint64
	switch k.distribution {
	case "uniform":
		index = k.random.Uint64N(k.space)
	case "zipf":
		index = k.zipf.Uint64()
	default:
		return nil
	}
	return strconv.AppendUint([]byte("key-"), index, 10)
}

// uniqueKey is the key of record seq of producer id with unique keys:
// unique per record, so a consumer can recognise a copy by its key.
func uniqueKey(id uint32, seq uint64) []byte {
	return fmt.Appendf(nil, "p%d-%d", id, seq)
}
