package share

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Sentinel errors of the package. Every error a Partition method or
// Restore/UnmarshalBinary returns wraps exactly one of them with %w and
// some context; the broker maps them to Kafka error codes with errors.Is.
var (
	// ErrInvalidRecordState: an acknowledgement names an offset that is
	// not acquired by the acknowledging member (or whose lock expired), or
	// lies outside the window [SPSO, SPEO) (Kafka INVALID_RECORD_STATE).
	ErrInvalidRecordState = errors.New("invalid record state")
	// ErrInvalidRequest: an acknowledgement range is malformed: First >
	// Last, a Types list of the wrong length, or an unknown
	// acknowledgement type (Kafka INVALID_REQUEST).
	ErrInvalidRequest = errors.New("invalid request")
	// ErrInvalidSnapshot: a snapshot's bytes or contents are not a
	// snapshot this package writes (truncated, unknown version, runs out
	// of order, unknown states, ...). The broker treats the share-partition
	// state as corrupt (Kafka has no wire error for it; the share
	// coordinator reports UNKNOWN_SERVER_ERROR).
	ErrInvalidSnapshot = errors.New("invalid share-partition snapshot")
)

// RecordState is the delivery state of one record of a share-partition's
// window. The values are Kafka's (RecordState in SharePartition and the
// DeliveryState of the share-group state records).
type RecordState int8

// The record states. A record moves Available → Acquired on delivery and
// Acquired → Acknowledged | Archived | Available on acknowledgement, lock
// expiry or the member's departure; Acknowledged and Archived are final.
const (
	// Available: the record may be delivered to any member.
	Available RecordState = 0
	// Acquired: the record is delivered to one member, which holds its
	// acquisition lock until a deadline.
	Acquired RecordState = 1
	// Acknowledged: the record was processed (AckAccept). Final.
	Acknowledged RecordState = 2
	// Archived: the record is never delivered again (rejected, a gap, a
	// skipped control or aborted record, or its delivery limit reached).
	// Final.
	Archived RecordState = 4
)

// String is the state's name as Kafka spells it.
func (s RecordState) String() string {
	switch s {
	case Available:
		return "Available"
	case Acquired:
		return "Acquired"
	case Acknowledged:
		return "Acknowledged"
	case Archived:
		return "Archived"
	}
	return fmt.Sprintf("RecordState(%d)", int8(s))
}

// done reports whether s is final (the record is never delivered again).
func (s RecordState) done() bool { return s == Acknowledged || s == Archived }

// valid reports whether s is one of the four states.
func (s RecordState) valid() bool {
	return s == Available || s == Acquired || s == Acknowledged || s == Archived
}

// AckType is the acknowledgement type of ShareFetch/ShareAcknowledge
// (the AcknowledgeTypes of an AcknowledgementBatch).
type AckType int8

// The acknowledgement types, with Kafka's numbering.
const (
	// AckGap: the offset holds no record (compacted away, a control
	// record): the record is archived.
	AckGap AckType = 0
	// AckAccept: the record was processed: it is acknowledged.
	AckAccept AckType = 1
	// AckRelease: the member gives the record back: it is available again,
	// or archived when its delivery count reached the delivery limit.
	AckRelease AckType = 2
	// AckReject: the record cannot be processed: it is archived.
	AckReject AckType = 3
	// AckRenew: extend the acquisition lock to LockDuration from now
	// (KIP-1222); the state is unchanged.
	AckRenew AckType = 4
)

// String is the type's name.
func (t AckType) String() string {
	switch t {
	case AckGap:
		return "Gap"
	case AckAccept:
		return "Accept"
	case AckRelease:
		return "Release"
	case AckReject:
		return "Reject"
	case AckRenew:
		return "Renew"
	}
	return fmt.Sprintf("AckType(%d)", int8(t))
}

// valid reports whether t is one of the five types.
func (t AckType) valid() bool { return t >= AckGap && t <= AckRenew }

// Config holds a share-partition's settings (share group configs).
type Config struct {
	// LockDuration is how long an acquisition lock lasts
	// (group.share.record.lock.duration.ms); default 30s.
	LockDuration time.Duration
	// MaxRecordLocks caps the records Acquired at once
	// (group.share.partition.max.record.locks); default 2000.
	MaxRecordLocks int
	// DeliveryLimit is the delivery count at which a released or expired
	// record is archived instead of made available again
	// (group.share.delivery.attempt.limit); default 5, at most
	// math.MaxInt16.
	DeliveryLimit int
}

// Defaults of Config (Kafka's).
const (
	DefaultLockDuration   = 30 * time.Second
	DefaultMaxRecordLocks = 2000
	DefaultDeliveryLimit  = 5
)

// WithDefaults returns c with every zero or negative field set to its
// default, and DeliveryLimit capped at math.MaxInt16 (delivery counts are
// int16, as on the wire).
func (c Config) WithDefaults() Config {
	if c.LockDuration <= 0 {
		c.LockDuration = DefaultLockDuration
	}
	if c.MaxRecordLocks <= 0 {
		c.MaxRecordLocks = DefaultMaxRecordLocks
	}
	if c.DeliveryLimit <= 0 {
		c.DeliveryLimit = DefaultDeliveryLimit
	}
	if c.DeliveryLimit > math.MaxInt16 {
		c.DeliveryLimit = math.MaxInt16
	}
	return c
}

// Batch is one record batch of the log as the broker read it: the offsets
// [First, Last]. Skip marks offsets that must never be delivered: a
// control batch (transaction marker) or, for read_committed, a batch of
// an aborted transaction. Skipped offsets in the window are archived when
// reached.
type Batch struct {
	First, Last int64
	Skip        bool
}

// AcquiredRecords is one range of a ShareFetch response's
// AcquiredRecords: the offsets [First, Last], all delivered for the
// DeliveryCount-th time. (It cannot be named Acquired: that is the
// RecordState.)
type AcquiredRecords struct {
	First, Last   int64
	DeliveryCount int16
}

// AckRange is one AcknowledgementBatch of ShareFetch/ShareAcknowledge: the
// offsets [First, Last] and their acknowledgement types. Types has one
// element (applying to the whole range) or Last-First+1 elements (one per
// offset).
type AckRange struct {
	First, Last int64
	Types       []AckType
}

// AckCounts counts what one Acknowledge changed, by outcome (for metrics).
type AckCounts struct {
	// Accepted records became Acknowledged (AckAccept).
	Accepted int
	// Released records became Available again (AckRelease).
	Released int
	// Rejected records became Archived (AckReject).
	Rejected int
	// Gaps are offsets acknowledged as AckGap (Archived).
	Gaps int
	// Archived records were released at the delivery limit and so became
	// Archived instead of Available (AckRelease).
	Archived int
	// Renewed records had their lock extended (AckRenew).
	Renewed int
}

// Counts counts the records of the window [SPSO, SPEO) by state.
type Counts struct {
	Available, Acquired, Acknowledged, Archived int
}
