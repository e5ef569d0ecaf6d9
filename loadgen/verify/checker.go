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
	// Lost counts acknowledged, committed records never read.
	Lost uint64 `json:"lost"`
	// Duplicated counts extra copies: a record read three times adds 2.
	Duplicated uint64 `json:"duplicated"`
	// Reordered counts records read after a record of the same producer on
	// the same partition with a higher sequence.
	Reordered uint64 `json:"reordered"`
	// AbortedVisible counts distinct records of aborted transactions (or
	// sent with the fate to-abort) that were read.
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
}

// Violations lists what in c breaks exactly-once delivery for a reader with
// the given isolation: loss, duplicates, reordering, phantoms, and (under
// read_committed) aborted records read. It returns nil when c is clean.
func (c Counts) Violations(isolation Isolation) []string {
	var violations []string
	add := func(n uint64, what string) {
		if n > 0 {
			violations = append(violations, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(c.Lost, "acknowledged-but-lost")
	add(c.Duplicated, "duplicated")
	add(c.Reordered, "reordered")
	add(c.Phantom, "never-sent (phantom)")
	if isolation == ReadCommitted {
		add(c.AbortedVisible, "aborted-but-visible under read_committed")
	}
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
	}
}

// Observe feeds one record value read from partition.
func (c *Checker) Observe(partition int32, value []byte) {
	c.counts.Read++
	header, err := DecodeHeader(value)
	if err != nil || header.RunID != c.ledger.runID || header.Stage != c.stage {
		c.counts.Foreign++
		return
	}
	if int(header.Producer) >= len(c.seen) || header.Sequence >= c.ledger.producers[header.Producer].Sent() {
		c.counts.Phantom++
		return
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
				if !read {
					counts.Lost++
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
