// Package verify checks, record by record, what a load run delivered.
//
// Every record value written by `exactly loadgen` starts with a fixed
// 32-byte header (see Header) followed by padding up to the workload's record
// size. Producers log into a Ledger what they sent, what the cluster
// acknowledged (and at which partition and offset, by which producer id,
// epoch and transactional id), what errored (an ambiguous write: it may or
// may not have been written) and how each transaction ended. After the run
// a Checker is fed every record read back from the cluster, partition by
// partition in offset order, and reports:
//
//   - lost: acknowledged (and, if transactional, committed) but never read.
//     Lost is split in two, lost = lost writes + unseen:
//   - lost write: a lost record whose acknowledged offset lies below a
//     position the reader reached on its partition: a later record of the
//     partition was read, this one was not (a hole in the log, as Jepsen's
//     Kafka checker defines it). For a pipeline's output or a table, whose
//     records stand for input records, the position reached is the highest
//     acknowledged input offset among the records read;
//   - unseen: a lost record that is not a lost write: nothing at or after
//     its acknowledged offset was read on its partition (the partition's
//     tail is missing: truncated, or not read), or its offset is not known
//     (acks=0 gives none). The read-back runs after the load has ended and
//     reads every partition to its end, so unseen records are lost too;
//   - duplicated: read more than once;
//   - reordered: read, within one producer's records on one partition, after
//     a record with a higher sequence;
//   - aborted-visible: belongs to an aborted transaction yet was read (a
//     violation under read_committed, expected under read_uncommitted);
//   - phantom: carries this run's id but was never sent;
//   - ambiguous-present / ambiguous-absent: the producer saw an error (or no
//     answer) for it, and it was / was not read.
//
// Every reader of a run also notes what it found at each offset of each
// topic in an OffsetObservations: the read-backs, the consume workers'
// polls, the live consumers and the application tables (whose rows name
// the input offset they came from). From them:
//
//   - inconsistent offset: an offset at which two reads (two readers, or
//     one reader twice) returned different records. A reader's count is
//     the inconsistent offsets it read.
//
// And every consumer (a consume-transform-produce worker, a database
// stage worker, a live consumer, a read-back) feeds a PollTracker with its
// assignment changes, seeks and polls, from which JudgePolls counts:
//
//   - poll skip: a record the consumer jumped over: two consecutive polls
//     of a partition returned offsets a then b > a+1, with no assignment
//     change or seek in between, and the reference read of the topic (the
//     read-back with the consumer's isolation level) returned a record
//     between a and b. Offsets the reference did not return (transaction
//     markers, aborted records under read_committed, compacted records)
//     may be skipped: the check is exact for records below the reference's
//     end offsets and says nothing about offsets beyond them. A read-back
//     under read_uncommitted that keeps control records must return every
//     offset (the run's topics are never compacted); a read-back under
//     read_committed is not judged for skips (a skipped committed record
//     is a lost write there);
//   - non-monotonic poll: two consecutive polls of a partition, with no
//     assignment change or seek in between, returned offsets a then b <= a;
//   - aborted poll (counted as aborted-visible on the consumers' check): a
//     read_committed consumer polled a record at an offset, below the
//     read_committed read-back's end, at which that read-back returned
//     nothing: a record of an aborted or never committed transaction
//     (OffsetObservations.Unreturned).
//
// Memory is bounded by bitmaps for the records: a few bits per sent record
// per producer, plus one highest-sequence word per (producer, partition).
// Acknowledged positions cost 16 bytes per acknowledged record and the
// offset observations 9 bytes per offset read per topic, so ten million
// records cost a few hundred megabytes at most.
//
// Beside the counts, a run names a few offending records per kind: a
// [TrackedLog] mirrors, per producer, what the ledger knows of each
// record, and an [OffenderSampler], fed each read like a [Checker],
// names the lost, duplicated, reordered, aborted-but-visible and phantom
// ones with where they were read and who wrote them.
package verify

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// HeaderSize is the size in bytes of the header at the start of every
// record value. Record sizes below it are rejected by the workload.
const HeaderSize = 32

// headerVersion is the version byte of the layout below.
const headerVersion = 1

// headerMagic marks a value written by exactly loadgen ("ex").
var headerMagic = [2]byte{'e', 'x'}

// Fate is what the producer intended for a record when it sent it.
type Fate uint8

const (
	// FateCommit marks a record meant to become visible: a plain produce or
	// one in a transaction the producer will try to commit.
	FateCommit Fate = 0
	// FateAbort marks a record in a transaction the producer will abort.
	FateAbort Fate = 1
)

// String returns "to-commit" or "to-abort".
func (f Fate) String() string {
	if f == FateAbort {
		return "to-abort"
	}
	return "to-commit"
}

// Header is the fixed part of every record value. Byte layout, big endian:
//
//	offset size field
//	0      2    magic "ex"
//	2      1    version (1)
//	3      1    flags: bits 0-1 fate (0 to-commit, 1 to-abort), bits 4-7 stage
//	4      8    run id
//	12     4    producer id (index of the producer within the run)
//	16     8    sequence (per producer, from 0, across all partitions)
//	24     8    send time, Unix nanoseconds
//
// Stage is 0 for records written by load producers and 1 for records a
// consume-transform-produce pipeline wrote from them (same producer,
// sequence and send time as the input record).
type Header struct {
	RunID    uint64
	Producer uint32
	Sequence uint64
	SendTime int64
	Fate     Fate
	Stage    uint8
}

// ErrNotLoadgenRecord is returned by DecodeHeader for values that do not
// start with a loadgen header.
var ErrNotLoadgenRecord = errors.New("value does not start with an exactly loadgen header")

// Encode writes the header into dst[:HeaderSize]. dst must be at least
// HeaderSize bytes long.
func (h Header) Encode(dst []byte) {
	_ = dst[HeaderSize-1] // one bounds check for the writes below
	dst[0], dst[1] = headerMagic[0], headerMagic[1]
	dst[2] = headerVersion
	dst[3] = byte(h.Fate&0b11) | h.Stage<<4
	binary.BigEndian.PutUint64(dst[4:], h.RunID)
	binary.BigEndian.PutUint32(dst[12:], h.Producer)
	binary.BigEndian.PutUint64(dst[16:], h.Sequence)
	binary.BigEndian.PutUint64(dst[24:], uint64(h.SendTime))
}

// NewValue returns a record value of size bytes (at least HeaderSize) that
// starts with h; the rest is a repeating filler pattern.
func NewValue(h Header, size int) []byte {
	size = max(size, HeaderSize)
	value := make([]byte, size)
	h.Encode(value)
	for i := HeaderSize; i < size; i++ {
		value[i] = byte('a' + i%26)
	}
	return value
}

// DecodeHeader parses the header at the start of value.
func DecodeHeader(value []byte) (Header, error) {
	if len(value) < HeaderSize || value[0] != headerMagic[0] || value[1] != headerMagic[1] {
		return Header{}, ErrNotLoadgenRecord
	}
	if value[2] != headerVersion {
		return Header{}, fmt.Errorf("loadgen header version %d: only version %d is known", value[2], headerVersion)
	}
	fate := Fate(value[3] & 0b11)
	if fate > FateAbort {
		return Header{}, fmt.Errorf("loadgen header fate %d is not a known fate", fate)
	}
	return Header{
		Fate:     fate,
		Stage:    value[3] >> 4,
		RunID:    binary.BigEndian.Uint64(value[4:]),
		Producer: binary.BigEndian.Uint32(value[12:]),
		Sequence: binary.BigEndian.Uint64(value[16:]),
		SendTime: int64(binary.BigEndian.Uint64(value[24:])),
	}, nil
}

// SetStage rewrites the stage bits of an encoded header in place.
func SetStage(value []byte, stage uint8) error {
	if _, err := DecodeHeader(value); err != nil {
		return err
	}
	value[3] = value[3]&0b1111 | stage<<4
	return nil
}
