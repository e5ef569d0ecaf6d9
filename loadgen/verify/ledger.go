package verify

import (
	"fmt"
	"sync"
)

// TransactionOutcome is how a transaction ended, as its producer saw it.
type TransactionOutcome uint8

const (
	// TransactionCommitted means EndTransaction(commit) succeeded.
	TransactionCommitted TransactionOutcome = iota
	// TransactionAborted means the transaction was aborted (deliberately, or
	// because the producer chose to abort after an error).
	TransactionAborted
	// TransactionUnknown means the end of the transaction errored: it may
	// have committed or not.
	TransactionUnknown
)

// Ledger holds, for every producer of one run, what it sent and what it
// learnt about each record. Producers write to their own ProducerLog while
// the run goes on; the Checker reads the ledger after every producer has
// finished (flushed and closed).
type Ledger struct {
	runID     uint64
	producers []*ProducerLog
}

// NewLedger returns a ledger for producers producers of run runID.
func NewLedger(runID uint64, producers int) *Ledger {
	ledger := &Ledger{runID: runID, producers: make([]*ProducerLog, producers)}
	for i := range ledger.producers {
		ledger.producers[i] = &ProducerLog{}
	}
	return ledger
}

// RunID returns the run id every record of this ledger carries.
func (l *Ledger) RunID() uint64 { return l.runID }

// Producer returns the log of producer id, which must be below the count
// given to NewLedger.
func (l *Ledger) Producer(id uint32) *ProducerLog { return l.producers[id] }

// Producers returns how many producers the ledger tracks.
func (l *Ledger) Producers() int { return len(l.producers) }

// Totals sums what every producer logged.
func (l *Ledger) Totals() LedgerTotals {
	var totals LedgerTotals
	for _, producer := range l.producers {
		producer.mu.Lock()
		totals.Sent += producer.sent
		totals.Acknowledged += producer.acknowledged.count()
		totals.Errored += producer.errored.count()
		totals.Aborted += producer.aborted.count()
		totals.Uncertain += producer.uncertain.count()
		producer.mu.Unlock()
	}
	return totals
}

// LedgerTotals are the producer-side counts of a run.
type LedgerTotals struct {
	// Sent counts records handed to the client.
	Sent uint64 `json:"sent"`
	// Acknowledged counts records whose produce the cluster acknowledged
	// (with acks=0: that the client wrote to the socket).
	Acknowledged uint64 `json:"acknowledged"`
	// Errored counts records whose produce failed: ambiguous writes.
	Errored uint64 `json:"errored"`
	// Aborted counts records in aborted transactions.
	Aborted uint64 `json:"aborted"`
	// Uncertain counts records in transactions whose end errored.
	Uncertain uint64 `json:"uncertain"`
}

// ProducerLog is one producer's record of its sends. Its methods may be
// called from the producing goroutine and from client callbacks at once: mu
// guards every field.
type ProducerLog struct {
	mu sync.Mutex
	// sent is one past the highest sequence handed to RecordSent; records
	// [0, sent) exist from the checker's point of view.
	sent uint64
	// acknowledged and errored are disjoint in practice: a client reports one
	// outcome per record.
	acknowledged bitmap
	errored      bitmap
	// aborted holds records sent to-abort and records of aborted
	// transactions; uncertain holds records of transactions whose commit
	// errored.
	aborted   bitmap
	uncertain bitmap
	// acks holds, per sequence, where the cluster said it wrote the
	// record: its zero value (offset 0) means no position is known, so an
	// acknowledged record at offset o is stored as o+1.
	acks []ackSlot
	// writers lists the distinct producer identities acks named; an
	// ackSlot's writer is 1 + an index into it (0: unknown). At most
	// maxWriters are kept, later ones are unknown.
	writers []Writer
}

// maxWriters bounds the producer identities a log keeps (one per epoch
// bump of one producer: a handful in practice).
const maxWriters = 255

// ackSlot is where one record was acknowledged.
type ackSlot struct {
	offsetPlusOne int64
	partition     int32
	writer        uint8
}

// UnknownOffset is Ack.Offset when the cluster gave no offset (acks=0).
const UnknownOffset = -1

// Ack is what a producer learnt when the cluster acknowledged a record.
type Ack struct {
	Partition int32
	// Offset is where the record was written, or UnknownOffset.
	Offset int64
	Writer
}

// Writer names the producer session that wrote a record, as far as it is
// known: ProducerID is -1 for a producer without one (not idempotent), and
// TransactionalID is empty for a non-transactional producer.
type Writer struct {
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
}

// String renders "producer id 1000 epoch 2, transactional id t-1", or ""
// when nothing is known.
func (w Writer) String() string {
	text := ""
	if w.ProducerID >= 0 {
		text = fmt.Sprintf("producer id %d epoch %d", w.ProducerID, w.ProducerEpoch)
	}
	if w.TransactionalID != "" {
		if text != "" {
			text += ", "
		}
		text += "transactional id " + w.TransactionalID
	}
	return text
}

// RecordSent notes that the record with sequence seq was handed to the
// client with the given fate. Sequences must be handed out from 0 without
// gaps; one producer logs them in increasing order.
func (p *ProducerLog) RecordSent(seq uint64, fate Fate) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if seq != p.sent {
		return fmt.Errorf("ledger: sequence %d sent after %d: sequences must be consecutive", seq, p.sent)
	}
	p.sent = seq + 1
	if fate == FateAbort {
		// A to-abort record is never committed: even if the abort itself
		// errors, the coordinator aborts the transaction when it times out.
		p.aborted.set(seq)
	}
	return nil
}

// RecordAcknowledged notes that the cluster acknowledged seq, written
// where at says (at.Offset may be UnknownOffset).
func (p *ProducerLog) RecordAcknowledged(seq uint64, at Ack) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.acknowledged.set(seq)
	if at.Offset < 0 {
		return
	}
	for uint64(len(p.acks)) <= seq {
		p.acks = append(p.acks, make([]ackSlot, max(len(p.acks), 64))...)
	}
	p.acks[seq] = ackSlot{offsetPlusOne: at.Offset + 1, partition: at.Partition, writer: p.writerIndex(at.Writer)}
}

// writerIndex returns 1 + the index of w in p.writers, adding it if there
// is room (0 when there is none). The caller holds p.mu.
func (p *ProducerLog) writerIndex(w Writer) uint8 {
	for index, known := range p.writers {
		if known == w {
			return uint8(index + 1)
		}
	}
	if len(p.writers) >= maxWriters {
		return 0
	}
	p.writers = append(p.writers, w)
	return uint8(len(p.writers))
}

// Acknowledged returns where seq was acknowledged, if its offset is known.
func (p *ProducerLog) Acknowledged(seq uint64) (Ack, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ackedAt(seq)
}

// ackedAt is Acknowledged for a caller holding p.mu.
func (p *ProducerLog) ackedAt(seq uint64) (Ack, bool) {
	if seq >= uint64(len(p.acks)) || p.acks[seq].offsetPlusOne == 0 {
		return Ack{Offset: UnknownOffset, Writer: Writer{ProducerID: -1}}, false
	}
	slot := p.acks[seq]
	at := Ack{Partition: slot.partition, Offset: slot.offsetPlusOne - 1, Writer: Writer{ProducerID: -1}}
	if slot.writer > 0 {
		at.Writer = p.writers[slot.writer-1]
	}
	return at, true
}

// RecordErrored notes that producing seq failed: it may or may not have been
// written.
func (p *ProducerLog) RecordErrored(seq uint64) {
	p.mu.Lock()
	p.errored.set(seq)
	p.mu.Unlock()
}

// RecordTransactionEnd notes how the transaction holding sequences
// [first, end) ended.
func (p *ProducerLog) RecordTransactionEnd(first, end uint64, outcome TransactionOutcome) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch outcome {
	case TransactionAborted:
		p.aborted.setRange(first, end)
	case TransactionUnknown:
		p.uncertain.setRange(first, end)
	}
}

// Sent returns one past the highest sequence sent.
func (p *ProducerLog) Sent() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sent
}

// status classifies sequence seq. The caller holds p.mu.
func (p *ProducerLog) status(seq uint64) recordStatus {
	switch {
	case p.aborted.has(seq):
		return statusAborted
	case p.uncertain.has(seq), p.errored.has(seq), !p.acknowledged.has(seq):
		return statusAmbiguous
	default:
		return statusCommitted
	}
}

// recordStatus is what the producer side knows of one record.
type recordStatus uint8

const (
	// statusCommitted: acknowledged and not in an aborted or uncertain
	// transaction: it must be read back exactly once.
	statusCommitted recordStatus = iota
	// statusAborted: in an aborted transaction: read_committed must not
	// return it.
	statusAborted
	// statusAmbiguous: errored, unanswered, or in a transaction whose end
	// errored: it may be read back at most once.
	statusAmbiguous
)
