package txn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// MarkerWriter writes transaction control markers. The broker implements it
// through its WriteTxnMarkers (API 27) path.
//
// WriteMarkers returns nil once every partition has the marker, or no
// longer exists (a deleted partition is skipped, as Kafka does). Any other
// error makes the coordinator call again later; a *MarkerError names the
// partitions still missing their marker, and only those are retried.
// Writing the same marker twice to a partition is harmless to the
// partition (the second finds no open transaction).
type MarkerWriter interface {
	WriteMarkers(ctx context.Context, producerID int64, producerEpoch int16, coordinatorEpoch int32, commit bool, partitions []TopicPartition) error
}

// MarkerError is a partial failure of WriteMarkers: Failed still need the
// marker; the others have it.
type MarkerError struct {
	Failed []TopicPartition
	Err    error
}

// Error describes the failure.
func (e *MarkerError) Error() string {
	return fmt.Sprintf("markers missing on %d partitions: %v", len(e.Failed), e.Err)
}

// Unwrap returns the cause.
func (e *MarkerError) Unwrap() error { return e.Err }

// OffsetCommitter makes a transaction's committed offsets visible (commit)
// or drops them (abort) in one consumer group. It must be idempotent: it is
// called again after an error or a coordinator restart.
type OffsetCommitter interface {
	CompleteTxn(ctx context.Context, group string, producerID int64, producerEpoch int16, commit bool) error
}

// OffsetCommitterFunc adapts a function to OffsetCommitter (for a group
// coordinator whose CompleteTxn finds the groups itself, ignore group).
type OffsetCommitterFunc func(ctx context.Context, group string, producerID int64, producerEpoch int16, commit bool) error

// CompleteTxn calls f.
func (f OffsetCommitterFunc) CompleteTxn(ctx context.Context, group string, producerID int64, producerEpoch int16, commit bool) error {
	return f(ctx, group, producerID, producerEpoch, commit)
}

// PIDSource allocates producer ids (*producers.IDAllocator is one).
type PIDSource interface {
	Next() (int64, error)
}

// Config configures a Coordinator. Zero fields take Kafka's defaults.
type Config struct {
	// MaxTimeout is transaction.max.timeout.ms (default 15 minutes).
	MaxTimeout time.Duration
	// IDExpiration is transactional.id.expiration.ms (default 7 days): an
	// id with no transaction open and no update for this long is removed.
	IDExpiration time.Duration
	// CleanupInterval is
	// transaction.abort.timed.out.transaction.cleanup.interval.ms (default
	// 10 s): how often the production driver calls Tick to abort
	// timed-out transactions and expire ids. Negative: it never does
	// (tests call Tick).
	CleanupInterval time.Duration
	// CompletionWait bounds how long the production driver lets
	// InitProducerId and EndTxn wait for markers and the Complete record
	// before replying (default 5 s). InitProducerId answers
	// ErrConcurrentTransactions if the fenced transaction is not complete
	// by then; EndTxn answers success anyway, since its decision is
	// durable. Negative: EndTxn replies as soon as Prepare* is durable and
	// InitProducerId answers ErrConcurrentTransactions after starting the
	// abort, as Kafka does.
	CompletionWait time.Duration
	// MarkerRetryBackoff is the production driver's pause between
	// attempts to write markers or the Complete record (default 100 ms).
	MarkerRetryBackoff time.Duration
	// OffsetsTopicPartitions is offsets.topic.num.partitions (default 50):
	// AddOffsetsToTxn adds the group's __consumer_offsets partition to the
	// participants, as Kafka records it.
	OffsetsTopicPartitions int
	// CoordinatorEpoch is written into every marker.
	CoordinatorEpoch int32
	// PartitionExists, if set, is asked for each partition added to a
	// transaction; false answers ErrUnknownPartition.
	PartitionExists func(topic string, partition int32) bool
	// Now is the clock requests are timed with (default time.Now); Tick
	// gets its time as an argument. Tests inject a fake clock.
	Now func() time.Time
	// Observer, if set, is told of transactions beginning and ending
	// (metrics). Nil: nobody is told.
	Observer Observer
	// Driver runs the background work: Tick, the completions, the wait
	// for a completion (default: [NewGoroutineDriver]). Tests
	// inject one that does nothing by itself and step the coordinator.
	Driver Driver
}

func (c Config) withDefaults() Config {
	if c.MaxTimeout <= 0 {
		c.MaxTimeout = 15 * time.Minute
	}
	if c.IDExpiration <= 0 {
		c.IDExpiration = 7 * 24 * time.Hour
	}
	if c.CleanupInterval == 0 {
		c.CleanupInterval = 10 * time.Second
	}
	if c.CompletionWait == 0 {
		c.CompletionWait = 5 * time.Second
	}
	if c.MarkerRetryBackoff <= 0 {
		c.MarkerRetryBackoff = 100 * time.Millisecond
	}
	if c.OffsetsTopicPartitions <= 0 {
		c.OffsetsTopicPartitions = 50
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// offsetsTopic is Kafka's consumer offsets topic. Markers for its
// partitions are not sent to the MarkerWriter: the OffsetCommitter
// completes the groups' offsets instead.
const offsetsTopic = "__consumer_offsets"

// Coordinator is the transaction coordinator for every transactional id of
// its log. See "Ownership and locking" in the package doc for its locking.
type Coordinator struct {
	cfg     Config
	log     Log
	ids     PIDSource
	markers MarkerWriter
	offsets OffsetCommitter

	// mu guards entries and closed. Never acquire an entry's mu while
	// holding it (entry.mu → c.mu is the order).
	mu      sync.Mutex
	entries map[string]*entry
	closed  bool
	// refuse is what calls fail with once closed: ErrCoordinatorClosed,
	// or the sentinel NewRefusingCoordinator was given. Set at creation.
	refuse error

	// driver runs Tick and the completions (Config.Driver).
	driver Driver
}

// entry is one transactional id.
type entry struct {
	// mu serializes the id's transitions: it is held from the decision
	// until the new state is written to the log and published.
	mu sync.Mutex
	// meta is the current durable state (guarded by mu).
	meta Metadata
	// written is false while meta exists only in memory (a new id whose
	// first InitProducerId has not been written yet); guarded by mu.
	written bool
	// completion is non-nil while meta.State is Prepare*: the second
	// phase handed to the driver. Guarded by mu.
	completion *Completion
	// removed is set (under mu) when the id expired and left the map; a
	// request that locked it looks the id up again.
	removed bool
	// published is a copy of meta for lock-free readers (Describe, List,
	// VerifyPartition); replaced after every durable transition. nil
	// until the first write.
	published atomic.Pointer[Metadata]
}

// NewCoordinator loads the log and returns a coordinator serving it, with
// its driver started. The completions of transactions found in
// PrepareCommit or PrepareAbort are handed to the driver (markers re-sent,
// then Complete written). offsets may be nil when no group coordinator is
// wired in.
func NewCoordinator(cfg Config, log Log, ids PIDSource, markers MarkerWriter, offsets OffsetCommitter) (*Coordinator, error) {
	if log == nil || ids == nil || markers == nil {
		return nil, errors.New("new transaction coordinator: log, producer id source and marker writer are required")
	}
	cfg = cfg.withDefaults()
	c := &Coordinator{cfg: cfg, log: log, ids: ids, markers: markers, offsets: offsets, entries: make(map[string]*entry), driver: cfg.Driver,
		refuse: ErrCoordinatorClosed}
	if c.driver == nil {
		c.driver = NewGoroutineDriver()
	}
	if err := c.load(); err != nil {
		return nil, err
	}
	c.driver.Start(c)
	for _, e := range c.entries {
		if e.meta.State.preparing() {
			c.startCompletion(e)
		}
	}
	return c, nil
}

// load replays the log, keeping the latest value per transactional id.
func (c *Coordinator) load() error {
	latest := make(map[string][]byte)
	err := c.log.Load(func(key, value []byte) error {
		id, err := decodeKey(key)
		if err != nil {
			return err
		}
		latest[id] = value
		return nil
	})
	if err != nil {
		return fmt.Errorf("load transaction log: %w", err)
	}
	for id, value := range latest {
		if value == nil {
			continue // tombstone
		}
		m, err := decodeValue(id, value)
		if err != nil {
			return fmt.Errorf("load transaction log: transactional id %q: %w", id, err)
		}
		e := &entry{meta: m, written: true}
		published := m.clone()
		e.published.Store(&published)
		c.entries[id] = e
	}
	return nil
}

// Close refuses new requests and stops the driver, waiting until it no
// longer calls the coordinator (no Tick or Step runs). Transactions left in
// Prepare* are completed by the next coordinator that loads the log.
func (c *Coordinator) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.driver.Stop()
	return nil
}

// NewRefusingCoordinator returns a coordinator that is closed from the
// start and fails every call with an error wrapping sentinel (for a broker
// of a cluster: ErrCoordinatorClosed, NOT_COORDINATOR, for an id whose
// __transaction_state partition it does not lead; ErrCoordinatorLoadInProgress
// while it loads one). It has no log and no ids.
func NewRefusingCoordinator(sentinel error) *Coordinator {
	return &Coordinator{entries: map[string]*entry{}, closed: true, refuse: sentinel}
}

// lockEntry returns the transactional id's entry locked, or nil when it is
// unknown and create is nil. With create, an unknown id gets an entry
// holding create's in-memory metadata (not yet written).
func (c *Coordinator) lockEntry(transactionalID string, create func() (Metadata, error)) (*entry, error) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, c.refuse
		}
		e := c.entries[transactionalID]
		if e == nil {
			if create == nil {
				c.mu.Unlock()
				return nil, nil
			}
			// The id allocation happens under c.mu only for new ids;
			// PIDSource blocks for at most one block reservation.
			m, err := create()
			if err != nil {
				c.mu.Unlock()
				return nil, err
			}
			e = &entry{meta: m}
			c.entries[transactionalID] = e
		}
		c.mu.Unlock()
		e.mu.Lock()
		if !e.removed {
			return e, nil
		}
		e.mu.Unlock()
	}
}

// write makes next durable and then the entry's state; the caller holds
// e.mu. On error the entry keeps its old state.
func (c *Coordinator) write(ctx context.Context, e *entry, next Metadata) error {
	if err := c.log.Append(ctx, encodeKey(next.TransactionalID), encodeValue(&next)); err != nil {
		return fmt.Errorf("transactional id %q: write %s: %w: %w", next.TransactionalID, next.State, ErrCoordinatorNotAvailable, err)
	}
	c.publish(e, next)
	return nil
}

// Observer is told of transaction lifecycle events. Its methods are
// called with the transactional id's lock held and must be cheap; they
// must not call the coordinator.
type Observer interface {
	// TransactionBegun: a transaction opened (the id moved to Ongoing).
	TransactionBegun()
	// TransactionCompleted: a transaction reached CompleteCommit
	// (committed) or CompleteAbort, every marker written.
	TransactionCompleted(committed bool)
	// TransactionTimedOut: Tick aborted a transaction past its timeout
	// (it is also reported completed, as aborted, once its markers are
	// written).
	TransactionTimedOut()
}

// observe reports the transition from prev to next to the observer.
func (c *Coordinator) observe(prev, next State) {
	o := c.cfg.Observer
	if o == nil || prev == next {
		return
	}
	switch {
	case next == StateOngoing:
		o.TransactionBegun()
	case next.completed() && prev.preparing():
		o.TransactionCompleted(next == StateCompleteCommit)
	}
}

// OpenTransactions counts the transactions open now (Ongoing,
// PrepareCommit or PrepareAbort), from the lock-free published copies.
func (c *Coordinator) OpenTransactions() int {
	c.mu.Lock()
	entries := make([]*entry, 0, len(c.entries))
	for _, e := range c.entries {
		entries = append(entries, e)
	}
	c.mu.Unlock()
	open := 0
	for _, e := range entries {
		if m := e.published.Load(); m != nil && (m.State == StateOngoing || m.State.preparing()) {
			open++
		}
	}
	return open
}

// publish installs next as the entry's state (caller holds e.mu).
func (c *Coordinator) publish(e *entry, next Metadata) {
	c.checkPublished(&next)
	if e.written {
		c.observe(e.meta.State, next.State)
	} else {
		c.observe(StateEmpty, next.State)
	}
	e.meta = next
	e.written = true
	published := next.clone()
	e.published.Store(&published)
}

// forgetUnwritten removes an entry whose first write failed, so the id is
// unknown again (caller holds e.mu).
func (c *Coordinator) forgetUnwritten(e *entry) {
	if e.written {
		return
	}
	e.removed = true
	c.mu.Lock()
	if c.entries[e.meta.TransactionalID] == e {
		delete(c.entries, e.meta.TransactionalID)
	}
	c.mu.Unlock()
}

// snapshot returns the published state of a transactional id.
func (c *Coordinator) snapshot(transactionalID string) *Metadata {
	c.mu.Lock()
	e := c.entries[transactionalID]
	c.mu.Unlock()
	if e == nil {
		return nil
	}
	return e.published.Load()
}
