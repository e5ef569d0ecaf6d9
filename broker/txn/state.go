package txn

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
)

// State is a transactional id's transaction status, numbered as Kafka
// numbers it in __transaction_state values (the status byte).
type State int8

// The transaction states.
const (
	// StateEmpty: the producer is initialized and no transaction is open.
	StateEmpty State = 0
	// StateOngoing: a transaction is open; partitions or a group were added.
	StateOngoing State = 1
	// StatePrepareCommit: the decision to commit is durable; markers are
	// being written.
	StatePrepareCommit State = 2
	// StatePrepareAbort: the decision to abort is durable; markers are
	// being written.
	StatePrepareAbort State = 3
	// StateCompleteCommit: every participant has its COMMIT marker.
	StateCompleteCommit State = 4
	// StateCompleteAbort: every participant has its ABORT marker.
	StateCompleteAbort State = 5
	// StateDead: the transactional id expired; its tombstone is written.
	StateDead State = 6
	// StatePrepareEpochFence: the coordinator bumped the epoch to fence
	// the current producer and is about to abort its transaction. Never
	// written to the log: it is followed at once by StatePrepareAbort.
	StatePrepareEpochFence State = 7
)

// stateCount is the number of states (for exhaustive tests).
const stateCount = 8

// String is the state's name as Kafka's DescribeTransactions and
// ListTransactions report it.
func (s State) String() string {
	switch s {
	case StateEmpty:
		return "Empty"
	case StateOngoing:
		return "Ongoing"
	case StatePrepareCommit:
		return "PrepareCommit"
	case StatePrepareAbort:
		return "PrepareAbort"
	case StateCompleteCommit:
		return "CompleteCommit"
	case StateCompleteAbort:
		return "CompleteAbort"
	case StateDead:
		return "Dead"
	case StatePrepareEpochFence:
		return "PrepareEpochFence"
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

// valid reports whether s is one of the known states.
func (s State) valid() bool { return s >= StateEmpty && s < stateCount }

// preparing reports whether s is PrepareCommit or PrepareAbort: the
// decision is durable and markers are being written.
func (s State) preparing() bool { return s == StatePrepareCommit || s == StatePrepareAbort }

// completed reports whether s is CompleteCommit or CompleteAbort.
func (s State) completed() bool { return s == StateCompleteCommit || s == StateCompleteAbort }

// legalPrevious is the transition table: the states each state may be
// entered from. It is Kafka's (TransactionState.validPreviousStates).
var legalPrevious = map[State][]State{
	StateEmpty:             {StateEmpty, StateCompleteCommit, StateCompleteAbort},
	StateOngoing:           {StateOngoing, StateEmpty, StateCompleteCommit, StateCompleteAbort},
	StatePrepareCommit:     {StateOngoing},
	StatePrepareAbort:      {StateOngoing, StatePrepareEpochFence},
	StateCompleteCommit:    {StatePrepareCommit},
	StateCompleteAbort:     {StatePrepareAbort},
	StateDead:              {StateEmpty, StateCompleteCommit, StateCompleteAbort},
	StatePrepareEpochFence: {StateOngoing},
}

// legalTransition reports whether from → to is in the table.
func legalTransition(from, to State) bool {
	return slices.Contains(legalPrevious[to], from)
}

// Producer ids and epochs.
const (
	// noProducerID is "none" for producer id fields.
	noProducerID int64 = -1
	// noProducerEpoch is "none" for epoch fields; a freshly created id
	// has it until its first InitProducerId is written.
	noProducerEpoch int16 = -1
	// maxProducerEpoch is the largest epoch; it is only ever used to fence
	// and abort (markers), never handed to a producer.
	maxProducerEpoch int16 = math.MaxInt16
	// noTimestamp is "none" for the start time.
	noTimestamp int64 = -1
)

// epochExhausted reports whether a producer at epoch can no longer be
// bumped for a new session: Kafka rotates to a new producer id at
// Short.MaxValue - 1, keeping the last value for fencing.
func epochExhausted(epoch int16) bool { return epoch >= maxProducerEpoch-1 }

// TopicPartition names a partition: a topic name and a partition index.
// It is the broker's one type for that name, beyond transactions too
// (markers routed to leaders, the replica fetcher's answers), so the
// broker package defines no other.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// String formats the partition as topic-partition, as Kafka logs it.
func (tp TopicPartition) String() string { return tp.Topic + "-" + strconv.Itoa(int(tp.Partition)) }

// compareTopicPartitions orders by topic, then partition.
func compareTopicPartitions(a, b TopicPartition) int {
	if a.Topic != b.Topic {
		if a.Topic < b.Topic {
			return -1
		}
		return 1
	}
	return int(a.Partition) - int(b.Partition)
}

// Metadata is the durable state of one transactional id: what a
// __transaction_state value holds. Values are treated as immutable once
// published: transition returns a new one.
type Metadata struct {
	TransactionalID string
	// ProducerID is the producer id in use; ≥ 0.
	ProducerID int64
	// ProducerEpoch is the current epoch; noProducerEpoch (-1) only for an
	// id created in memory whose first InitProducerId is in flight.
	// Invariant: every marker for the current transaction carries it.
	ProducerEpoch int16
	// LastProducerEpoch is the epoch before the last bump that the same
	// producer asked for (KIP-360 InitProducerId with its id and epoch,
	// or a transaction version 2 EndTxn), so a retry of that request is
	// recognized; -1 when the last bump fenced someone or came from a
	// fresh InitProducerId.
	LastProducerEpoch int16
	// PreviousProducerID is the producer id used before the last
	// rotation (epoch exhaustion), -1 if none; a retry from it is
	// recognized like LastProducerEpoch.
	PreviousProducerID int64
	// NextProducerID is set in PrepareCommit/PrepareAbort under
	// transaction version 2 when the epoch is exhausted: the producer id
	// the transactional id moves to when the transaction completes; -1
	// otherwise.
	NextProducerID int64
	// TimeoutMs is the transaction timeout the producer asked for.
	TimeoutMs int32
	State     State
	// Partitions are the participant partitions, sorted and unique. It
	// includes the __consumer_offsets partition of each group in Groups
	// (as Kafka records it). Empty outside Ongoing/Prepare*.
	Partitions []TopicPartition
	// Groups are the consumer groups whose offsets are in the
	// transaction (AddOffsetsToTxn), sorted and unique.
	Groups []string
	// StartTime is when the transaction became Ongoing (Unix ms), -1 if
	// none is open.
	StartTime int64
	// LastUpdate is the time of the last transition (Unix ms).
	LastUpdate int64
	// TransactionVersion is the client's transaction version: 2 when it
	// uses KIP-890 part 2 (epoch bump at every EndTxn), else 0.
	TransactionVersion int16
}

// newMetadata is the in-memory state of a transactional id seen for the
// first time: a fresh producer id at epoch -1, so that its first
// InitProducerId bumps it to 0.
func newMetadata(transactionalID string, producerID int64, timeoutMs int32, now time.Time) Metadata {
	return Metadata{
		TransactionalID:    transactionalID,
		ProducerID:         producerID,
		ProducerEpoch:      noProducerEpoch,
		LastProducerEpoch:  noProducerEpoch,
		PreviousProducerID: noProducerID,
		NextProducerID:     noProducerID,
		TimeoutMs:          timeoutMs,
		State:              StateEmpty,
		StartTime:          noTimestamp,
		LastUpdate:         now.UnixMilli(),
	}
}

// clone returns a deep copy (the slices are not shared).
func (m *Metadata) clone() Metadata {
	next := *m
	next.Partitions = slices.Clone(m.Partitions)
	next.Groups = slices.Clone(m.Groups)
	return next
}

// hasPartition reports whether tp is a participant.
func (m *Metadata) hasPartition(tp TopicPartition) bool {
	_, found := slices.BinarySearchFunc(m.Partitions, tp, compareTopicPartitions)
	return found
}

// addPartitions adds partitions, keeping the slice sorted and unique.
func (m *Metadata) addPartitions(partitions []TopicPartition) {
	for _, tp := range partitions {
		if i, found := slices.BinarySearchFunc(m.Partitions, tp, compareTopicPartitions); !found {
			m.Partitions = slices.Insert(m.Partitions, i, tp)
		}
	}
}

// addGroup adds a group, keeping the slice sorted and unique.
func (m *Metadata) addGroup(group string) {
	if i, found := slices.BinarySearch(m.Groups, group); !found {
		m.Groups = slices.Insert(m.Groups, i, group)
	}
}

// transition returns a copy of m moved to state `to` at now, with change
// (if not nil) applied to the copy; m is not modified. It fails with
// ErrInvalidTxnState when the table does not allow m.State → to. The
// bookkeeping every move shares is done here:
//   - entering Ongoing from Empty/Complete* starts a transaction: the start
//     time is now and the participants start empty;
//   - entering Empty or Complete* closes it: no participants, no start time;
//     Complete* also switches to NextProducerID when one is pending.
func (m *Metadata) transition(to State, now time.Time, change func(next *Metadata)) (Metadata, error) {
	if !m.State.valid() || !to.valid() || !legalTransition(m.State, to) {
		return Metadata{}, fmt.Errorf("transactional id %q: %s → %s: %w", m.TransactionalID, m.State, to, ErrInvalidTxnState)
	}
	next := m.clone()
	next.State = to
	next.LastUpdate = now.UnixMilli()
	switch to {
	case StateOngoing:
		if m.State != StateOngoing {
			next.StartTime = now.UnixMilli()
			next.Partitions = nil
			next.Groups = nil
		}
	case StateEmpty, StateDead:
		next.Partitions, next.Groups, next.StartTime = nil, nil, noTimestamp
	case StateCompleteCommit, StateCompleteAbort:
		next.Partitions, next.Groups, next.StartTime = nil, nil, noTimestamp
		if m.NextProducerID != noProducerID {
			next.PreviousProducerID = m.ProducerID
			next.ProducerID = m.NextProducerID
			next.ProducerEpoch = 0
			next.NextProducerID = noProducerID
		}
	}
	if change != nil {
		change(&next)
	}
	return next, nil
}
