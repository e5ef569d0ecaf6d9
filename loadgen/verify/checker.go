package verify

import "fmt"

// Isolation is the isolation level of the reader feeding a Checker.
type Isolation uint8

const (
	// ReadCommitted readers must never return records of aborted
	// transactions.
	ReadCommitted Isolation = iota
	// ReadUncommitted readers return aborted records too.
	ReadUncommitted
)

// String returns the Kafka name of the isolation level.
func (i Isolation) String() string {
	if i == ReadUncommitted {
		return "read_uncommitted"
	}
	return "read_committed"
}

// Counts is the checker's verdict on one read-back of one run.
type Counts struct {
	// Read counts records fed to the checker.
	Read uint64 `json:"read"`
	// Foreign counts records without this run's header or with another
	// stage; they are ignored otherwise.
	Foreign uint64 `json:"foreign"`
	// Unique counts distinct records of this run read.
	Unique uint64 `json:"unique"`
	// Lost counts acknowledged, committed records never read. It is the
	// sum of LostWrites and Unseen.
	Lost uint64 `json:"lost"`
	// LostWrites counts the lost records whose acknowledged offset lies
	// below a position this reader reached on the record's partition: a
	// later record of the partition was read, this one was not.
	LostWrites uint64 `json:"lost_writes,omitempty"`
	// Unseen counts the other lost records: nothing at or after their
	// acknowledged offset was read on their partition (the partition's
	// tail is missing), or their offset is not known (acks=0).
	Unseen uint64 `json:"unseen,omitempty"`
	// Duplicated counts extra copies: a record read three times adds 2.
	Duplicated uint64 `json:"duplicated"`
	// Reordered counts records read after a record of the same producer on
	// the same partition with a higher sequence.
	Reordered uint64 `json:"reordered"`
	// AbortedVisible counts distinct records of aborted transactions (or
	// sent with the fate to-abort) that were read. For the polls of
	// read_committed consumers: the offsets they polled that the
	// read_committed read-back did not return (see
	// OffsetObservations.Unreturned).
	AbortedVisible uint64 `json:"aborted_visible"`
	// Phantom counts records of this run that no producer sent.
	Phantom uint64 `json:"phantom"`
	// AmbiguousPresent counts errored or unanswered records that were read.
	AmbiguousPresent uint64 `json:"ambiguous_present"`
	// AmbiguousAbsent counts errored or unanswered records that were not
	// read.
	AmbiguousAbsent uint64 `json:"ambiguous_absent"`
	// Unprotected counts, in a deduplicating consumer's output, extra
	// copies whose first copy had left the consumer's window when they
	// arrived: the window does not promise to catch them, so they are
	// counted here and not in Duplicated.
	Unprotected uint64 `json:"unprotected,omitempty"`
	// InconsistentOffsets counts offsets this reader read at which some
	// read of the run (this reader's or another's) returned a different
	// record (see OffsetObservations).
	InconsistentOffsets uint64 `json:"inconsistent_offsets,omitempty"`
	// PollSkips counts records a consumer jumped over between two
	// consecutive polls of a partition with no reassignment or seek in
	// between (see PollTracker).
	PollSkips uint64 `json:"poll_skips,omitempty"`
	// NonMonotonicPolls counts consecutive polls of a partition, with no
	// reassignment or seek in between, whose offset did not move forward.
	NonMonotonicPolls uint64 `json:"non_monotonic_polls,omitempty"`
}

// Violation names, the text after the count in each of Violations'
// entries ("12 duplicated").
const (
	ViolationLost                = "acknowledged-but-lost"
	ViolationDuplicated          = "duplicated"
	ViolationReordered           = "reordered"
	ViolationPhantom             = "never-sent (phantom)"
	ViolationAbortedVisible      = "aborted-but-visible under read_committed"
	ViolationInconsistentOffsets = "inconsistent offsets"
	ViolationPollSkips           = "records skipped by a poll"
	ViolationNonMonotonicPolls   = "non-monotonic polls"
)

// Violations lists what in c breaks exactly-once delivery for a reader with
// the given isolation: loss (split into lost writes and unseen records),
// duplicates, reordering, phantoms, (under read_committed) aborted records
// read, inconsistent offsets, poll skips and non-monotonic polls. Each
// entry is "<count> <name>", name one of the Violation constants, followed
// for loss by the split: "3 acknowledged-but-lost (2 lost writes, 1
// unseen)". It returns nil when c is clean.
func (c Counts) Violations(isolation Isolation) []string {
	var violations []string
	add := func(n uint64, what string) {
		if n > 0 {
			violations = append(violations, fmt.Sprintf("%d %s", n, what))
		}
	}
	if c.Lost > 0 {
		violations = append(violations, fmt.Sprintf("%d %s (%d lost writes, %d unseen)", c.Lost, ViolationLost, c.LostWrites, c.Unseen))
	}
	add(c.Duplicated, ViolationDuplicated)
	add(c.Reordered, ViolationReordered)
	add(c.Phantom, ViolationPhantom)
	if isolation == ReadCommitted {
		add(c.AbortedVisible, ViolationAbortedVisible)
	}
	add(c.InconsistentOffsets, ViolationInconsistentOffsets)
	add(c.PollSkips, ViolationPollSkips)
	add(c.NonMonotonicPolls, ViolationNonMonotonicPolls)
	return violations
}

// partitionKey names one producer's records on one partition.
type partitionKey struct {
	producer  uint32
	partition int32
}

// Checker compares the records read back from one topic with a Ledger. It is
// used by one goroutine: Observe every record of every partition, in offset
// order within a partition, then Finish once.
type Checker struct {
	ledger    *Ledger
	isolation Isolation
	stage     uint8
	// seen has, per producer, a bit per sequence read at least once.
	seen []bitmap
	// highest is, per (producer, partition), the highest sequence read so
	// far; a lower, not yet seen sequence read later is reordered.
	highest map[partitionKey]uint64
	// reached is, per partition, one past the highest position read: for
	// stage 0 the offset a record was read at, for a later stage the
	// offset its input record was acknowledged at (see Observe). A lost
	// record acknowledged below it is a lost write.
	reached map[int32]int64
	counts  Counts
}

// NewChecker returns a checker of the records of ledger's run, read with
// isolation, that expects records of the given stage (0 for load producers'
// records, 1 for a pipeline's output).
func NewChecker(ledger *Ledger, isolation Isolation, stage uint8) *Checker {
	return &Checker{
		ledger:    ledger,
		isolation: isolation,
		stage:     stage,
		seen:      make([]bitmap, ledger.Producers()),
		highest:   make(map[partitionKey]uint64),
		reached:   make(map[int32]int64),
	}
}

// Observe feeds one record value read from partition at offset.
//
// A stage 0 reader reads the topic the load producers wrote: every record
// read, ours or not, moves the position reached on its partition to its
// offset. A later stage's records (a pipeline's output, a table's rows)
// stand for input records: a record moves the position reached on its
// input record's partition to the offset the input record was
// acknowledged at, when the ledger knows it. Either way a lost record
// acknowledged below the position reached is a lost write.
func (c *Checker) Observe(partition int32, offset int64, value []byte) {
	c.counts.Read++
	if c.stage == 0 {
		c.reach(partition, offset)
	}
	header, err := DecodeHeader(value)
	if err != nil || header.RunID != c.ledger.runID || header.Stage != c.stage {
		c.counts.Foreign++
		return
	}
	if int(header.Producer) >= len(c.seen) || header.Sequence >= c.ledger.producers[header.Producer].Sent() {
		c.counts.Phantom++
		return
	}
	if c.stage != 0 {
		if at, ok := c.ledger.producers[header.Producer].Acknowledged(header.Sequence); ok {
			c.reach(at.Partition, at.Offset)
		}
	}
	if c.seen[header.Producer].set(header.Sequence) {
		c.counts.Duplicated++
		return
	}
	c.counts.Unique++
	key := partitionKey{producer: header.Producer, partition: partition}
	if highest, ok := c.highest[key]; ok && header.Sequence < highest {
		c.counts.Reordered++
		return
	}
	c.highest[key] = header.Sequence
}

// reach notes that the reader got to offset of partition.
func (c *Checker) reach(partition int32, offset int64) {
	if reached, ok := c.reached[partition]; !ok || offset+1 > reached {
		c.reached[partition] = offset + 1
	}
}

// Reached returns the highest position read on partition (see Observe),
// or false when nothing was read there.
func (c *Checker) Reached(partition int32) (int64, bool) {
	reached, ok := c.reached[partition]
	return reached - 1, ok
}

// Finish walks every sent record and returns the counts. The ledger's
// producers must have finished.
func (c *Checker) Finish() Counts {
	counts := c.counts
	for id, producer := range c.ledger.producers {
		producer.mu.Lock()
		seen := &c.seen[id]
		for seq := range producer.sent {
			read := seen.has(seq)
			switch producer.status(seq) {
			case statusCommitted:
				if read {
					break
				}
				counts.Lost++
				if c.lostWrite(producer, seq) {
					counts.LostWrites++
				} else {
					counts.Unseen++
				}
			case statusAborted:
				if read {
					counts.AbortedVisible++
				}
			case statusAmbiguous:
				if read {
					counts.AmbiguousPresent++
				} else {
					counts.AmbiguousAbsent++
				}
			}
		}
		producer.mu.Unlock()
	}
	return counts
}

// lostWrite reports whether the unread record seq of producer was
// acknowledged below the position reached on its partition. The caller
// holds producer.mu.
func (c *Checker) lostWrite(producer *ProducerLog, seq uint64) bool {
	at, known := producer.ackedAt(seq)
	if !known {
		return false
	}
	_, lostWrite := c.LostWrite(at.Partition, at.Offset)
	return lostWrite
}

// LostWrite reports whether a lost record acknowledged at (partition,
// offset) is a lost write for this reader, and the position reached on
// the partition.
func (c *Checker) LostWrite(partition int32, offset int64) (reached int64, lostWrite bool) {
	reached, ok := c.Reached(partition)
	return reached, ok && offset < reached
}
