package share

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Snapshot is the durable form of a share-partition (what the share
// coordinator stores). Acquisitions are not durable: an Acquired record is
// written as Available with its delivery count, so after a crash it is
// delivered again and its count survives.
//
// A snapshot is canonical: Batches cover [StartOffset, EndOffset) exactly,
// in order, without gaps or overlaps, as maximal runs (adjacent batches
// differ in state or delivery count), none Acquired, and the first one is
// not Acknowledged or Archived (SPSO is past every leading done record).
// Snapshot writes only such snapshots and Restore accepts only them.
type Snapshot struct {
	// StartOffset is the SPSO.
	StartOffset int64
	// LeaderEpoch is the epoch of the partition leader that wrote the
	// snapshot (for fencing; see Partition.SetLeaderEpoch).
	LeaderEpoch int32
	// StateEpoch is bumped by Reset.
	StateEpoch int32
	// Batches are the runs of equal (state, delivery count) over
	// [StartOffset, EndOffset).
	Batches []SnapshotBatch
	// EndOffset is the SPEO.
	EndOffset int64
}

// SnapshotBatch is a run of records [First, Last] sharing a state and a
// delivery count.
type SnapshotBatch struct {
	First, Last   int64
	DeliveryCount int16
	State         RecordState
}

// Snapshot returns the partition's durable form.
func (p *Partition) Snapshot() Snapshot {
	s := Snapshot{StartOffset: p.start, EndOffset: p.end, LeaderEpoch: p.leaderEpoch, StateEpoch: p.stateEpoch}
	for o := p.start; o < p.end; o++ {
		r := p.rec(o)
		state := r.state
		if state == Acquired {
			state = Available
		}
		if n := len(s.Batches); n > 0 && s.Batches[n-1].State == state && s.Batches[n-1].DeliveryCount == r.deliveryCount {
			s.Batches[n-1].Last = o
			continue
		}
		s.Batches = append(s.Batches, SnapshotBatch{First: o, Last: o, DeliveryCount: r.deliveryCount, State: state})
	}
	return s
}

// Restore rebuilds a share-partition from its snapshot (every record
// Available, Acknowledged or Archived; no lock is held). A snapshot that
// is not canonical (see Snapshot) is ErrInvalidSnapshot. Zero fields of
// cfg take their defaults. Delivery counts above cfg.DeliveryLimit (the
// limit was lowered) are kept; such records are archived when next
// reached instead of being acquired.
func Restore(cfg Config, s Snapshot) (*Partition, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	p := New(cfg, s.StartOffset)
	p.leaderEpoch, p.stateEpoch = s.LeaderEpoch, s.StateEpoch
	p.buf = make([]record, 0, s.EndOffset-s.StartOffset)
	for _, b := range s.Batches {
		for range b.Last - b.First + 1 {
			p.push(record{state: b.State, deliveryCount: b.DeliveryCount})
		}
	}
	return p, nil
}

// validate checks that s is canonical (see Snapshot).
func (s Snapshot) validate() error {
	switch {
	case s.StartOffset < 0:
		return fmt.Errorf("restore: start offset %d: %w", s.StartOffset, ErrInvalidSnapshot)
	case s.EndOffset < s.StartOffset:
		return fmt.Errorf("restore: end offset %d before start offset %d: %w", s.EndOffset, s.StartOffset, ErrInvalidSnapshot)
	case s.EndOffset-s.StartOffset > MaxWindow:
		return fmt.Errorf("restore: window %d-%d larger than %d records: %w", s.StartOffset, s.EndOffset-1, MaxWindow, ErrInvalidSnapshot)
	}
	next := s.StartOffset
	for i, b := range s.Batches {
		switch {
		case b.First != next:
			return fmt.Errorf("restore: batch %d starts at %d, want %d: %w", i, b.First, next, ErrInvalidSnapshot)
		case b.Last < b.First || b.Last >= s.EndOffset:
			return fmt.Errorf("restore: batch %d is %d-%d, outside %d-%d: %w", i, b.First, b.Last, s.StartOffset, s.EndOffset-1, ErrInvalidSnapshot)
		case !b.State.valid() || b.State == Acquired:
			return fmt.Errorf("restore: batch %d has state %v: %w", i, b.State, ErrInvalidSnapshot)
		case b.DeliveryCount < 0:
			return fmt.Errorf("restore: batch %d has delivery count %d: %w", i, b.DeliveryCount, ErrInvalidSnapshot)
		case i == 0 && b.State.done():
			return fmt.Errorf("restore: first batch is %v (the start offset would be past it): %w", b.State, ErrInvalidSnapshot)
		case i > 0 && s.Batches[i-1].State == b.State && s.Batches[i-1].DeliveryCount == b.DeliveryCount:
			return fmt.Errorf("restore: batches %d and %d not merged: %w", i-1, i, ErrInvalidSnapshot)
		}
		next = b.Last + 1
	}
	if next != s.EndOffset {
		return fmt.Errorf("restore: batches end at %d, want end offset %d: %w", next, s.EndOffset, ErrInvalidSnapshot)
	}
	return nil
}

// SnapshotVersion is the version MarshalBinary writes and UnmarshalBinary
// reads (the format is in the package documentation).
const SnapshotVersion = 1

// Sizes of the binary format: the header (version, start and end offsets,
// leader and state epochs, batch count) and one batch (first, last,
// delivery count, state).
const (
	snapshotHeaderSize = 2 + 8 + 8 + 4 + 4 + 4
	snapshotBatchSize  = 8 + 8 + 2 + 1
)

// MarshalBinary encodes the snapshot (version SnapshotVersion, big-endian;
// see the package documentation). It does not validate the contents.
func (s Snapshot) MarshalBinary() ([]byte, error) {
	if len(s.Batches) > math.MaxInt32 {
		return nil, fmt.Errorf("marshal snapshot: %d batches: %w", len(s.Batches), ErrInvalidSnapshot)
	}
	b := make([]byte, 0, snapshotHeaderSize+snapshotBatchSize*len(s.Batches))
	b = binary.BigEndian.AppendUint16(b, SnapshotVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(s.StartOffset))
	b = binary.BigEndian.AppendUint64(b, uint64(s.EndOffset))
	b = binary.BigEndian.AppendUint32(b, uint32(s.LeaderEpoch))
	b = binary.BigEndian.AppendUint32(b, uint32(s.StateEpoch))
	b = binary.BigEndian.AppendUint32(b, uint32(len(s.Batches)))
	for _, batch := range s.Batches {
		b = binary.BigEndian.AppendUint64(b, uint64(batch.First))
		b = binary.BigEndian.AppendUint64(b, uint64(batch.Last))
		b = binary.BigEndian.AppendUint16(b, uint16(batch.DeliveryCount))
		b = append(b, byte(batch.State))
	}
	return b, nil
}

// UnmarshalBinary decodes a snapshot MarshalBinary wrote. Input that is
// truncated, of another version, with a batch count the input cannot hold,
// or with trailing bytes is ErrInvalidSnapshot; it never panics. It checks
// the encoding only: Restore checks the contents.
func (s *Snapshot) UnmarshalBinary(b []byte) error {
	if len(b) < snapshotHeaderSize {
		return fmt.Errorf("unmarshal snapshot: %d bytes, shorter than the %d-byte header: %w", len(b), snapshotHeaderSize, ErrInvalidSnapshot)
	}
	if v := binary.BigEndian.Uint16(b); v != SnapshotVersion {
		return fmt.Errorf("unmarshal snapshot: version %d, want %d: %w", v, SnapshotVersion, ErrInvalidSnapshot)
	}
	count := binary.BigEndian.Uint32(b[snapshotHeaderSize-4:])
	body := b[snapshotHeaderSize:]
	// Check the count against the input before allocating for it.
	if uint64(count) > uint64(len(body)/snapshotBatchSize) {
		return fmt.Errorf("unmarshal snapshot: %d batches, the %d bytes after the header hold %d: %w",
			count, len(body), len(body)/snapshotBatchSize, ErrInvalidSnapshot)
	}
	if want := int(count) * snapshotBatchSize; len(body) != want {
		return fmt.Errorf("unmarshal snapshot: %d bytes after %d batches: %w", len(body)-want, count, ErrInvalidSnapshot)
	}
	decoded := Snapshot{
		StartOffset: int64(binary.BigEndian.Uint64(b[2:])),
		EndOffset:   int64(binary.BigEndian.Uint64(b[10:])),
		LeaderEpoch: int32(binary.BigEndian.Uint32(b[18:])),
		StateEpoch:  int32(binary.BigEndian.Uint32(b[22:])),
	}
	if count > 0 {
		decoded.Batches = make([]SnapshotBatch, count)
	}
	for i := range decoded.Batches {
		e := body[i*snapshotBatchSize:]
		decoded.Batches[i] = SnapshotBatch{
			First:         int64(binary.BigEndian.Uint64(e)),
			Last:          int64(binary.BigEndian.Uint64(e[8:])),
			DeliveryCount: int16(binary.BigEndian.Uint16(e[16:])),
			State:         RecordState(e[18]),
		}
	}
	*s = decoded
	return nil
}
