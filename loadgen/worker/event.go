package worker

import (
	"slices"

	"github.com/exactly-eos/exactly/loadgen/verify"
)

// Event is one line a worker writes to stdout, as JSON.
type Event struct {
	// Event is ready, sent, ack, err, ending, end (producer), assigned,
	// open, committed (pipeline, database stage), crashing (database
	// stage), one of the poll events (a consume worker's polls) or fatal.
	Event   string `json:"e"`
	Seq     uint64 `json:"s,omitempty"`
	First   uint64 `json:"first,omitempty"`
	End     uint64 `json:"end,omitempty"`
	Outcome string `json:"o,omitempty"` // committed, aborted, unknown
	Time    int64  `json:"t,omitempty"` // Unix nanoseconds
	Count   int64  `json:"n,omitempty"`
	Message string `json:"m,omitempty"`
	// Database stage commits: the send times of the rows delivered, how
	// long the commit took (ns), and what happened since the last report.
	SendTimes []int64 `json:"st,omitempty"`
	Took      int64   `json:"took,omitempty"`
	Dropped   int64   `json:"d,omitempty"`
	Conflicts int64   `json:"c,omitempty"`
	Seeks     int64   `json:"k,omitempty"`
	// Acknowledged positions and consume workers' polls.
	VerifyEvent
}

// VerifyEvent is the part of an Event the checker needs: where an
// acknowledged record was written (event ack), and a consume worker's
// assignment changes and polls (the poll events).
type VerifyEvent struct {
	// Ack: the record's partition and offset (-1: unknown), and the
	// producer id and epoch that wrote it. Polled: the partition.
	Partition     int32 `json:"pt,omitempty"`
	Offset        int64 `json:"off,omitempty"`
	ProducerID    int64 `json:"pid,omitempty"`
	ProducerEpoch int16 `json:"pe,omitempty"`
	// Polls: the partitions of an assignment change (none: every
	// partition, for poll-rewound); the offsets and record ids of a
	// poll of Partition, and whether it was unsettled.
	Partitions []int32  `json:"ps,omitempty"`
	Offsets    []int64  `json:"os,omitempty"`
	Records    []uint64 `json:"rs,omitempty"`
	Unsettled  bool     `json:"u,omitempty"`
}

// ackEvent is an ack's fields in an event.
func ackEvent(at verify.Ack) VerifyEvent {
	return VerifyEvent{Partition: at.Partition, Offset: at.Offset, ProducerID: at.ProducerID, ProducerEpoch: at.ProducerEpoch}
}

// Ack is the acknowledgement an ack event reports, by the producer with
// transactionalID.
func (e VerifyEvent) Ack(transactionalID string) verify.Ack {
	return verify.Ack{Partition: e.Partition, Offset: e.Offset,
		Writer: verify.Writer{TransactionalID: transactionalID, ProducerID: e.ProducerID, ProducerEpoch: e.ProducerEpoch}}
}

// Events a worker writes for its poll tracker, which the runner replays
// (ReplayPoll) in the order they came.
const (
	EventPollAssigned = "poll-assigned"
	EventPollRevoked  = "poll-revoked"
	EventPollRewound  = "poll-rewound"
	EventPolled       = "polled"
)

// MaxPolledPerEvent bounds the records of one polled event, so that a
// line stays well below the runner's 1 MiB line limit (about 30 bytes a
// record); a bigger poll is sent in consecutive events, which the tracker
// compares as one.
const MaxPolledPerEvent = 4096

// pollReport is a worker's poll sink: each call becomes one event line.
type pollReport struct{ reporter *Reporter }

func (p pollReport) Assigned(partitions []int32) {
	p.reporter.Emit(Event{Event: EventPollAssigned, VerifyEvent: VerifyEvent{Partitions: partitions}})
}

func (p pollReport) Revoked(partitions []int32) {
	p.reporter.Emit(Event{Event: EventPollRevoked, VerifyEvent: VerifyEvent{Partitions: partitions}})
}

func (p pollReport) Rewound(partitions []int32) {
	p.reporter.Emit(Event{Event: EventPollRewound, VerifyEvent: VerifyEvent{Partitions: partitions}})
}

func (p pollReport) Polled(partition int32, records []verify.PolledRecord, settled bool) {
	for chunk := range slices.Chunk(records, MaxPolledPerEvent) {
		event := VerifyEvent{Partition: partition, Unsettled: !settled,
			Offsets: make([]int64, len(chunk)), Records: make([]uint64, len(chunk))}
		for index, record := range chunk {
			event.Offsets[index], event.Records[index] = record.Offset, uint64(record.Record)
		}
		p.reporter.Emit(Event{Event: EventPolled, VerifyEvent: event})
	}
}

// ReplayPoll feeds a worker's poll event into sink and reports whether
// event was one.
func ReplayPoll(sink verify.PollSink, event Event) bool {
	switch event.Event {
	case EventPollAssigned:
		sink.Assigned(event.Partitions)
	case EventPollRevoked:
		sink.Revoked(event.Partitions)
	case EventPollRewound:
		sink.Rewound(event.Partitions)
	case EventPolled:
		records := make([]verify.PolledRecord, min(len(event.Offsets), len(event.Records)))
		for index := range records {
			records[index] = verify.PolledRecord{Offset: event.Offsets[index], Record: verify.RecordID(event.Records[index])}
		}
		sink.Polled(event.Partition, records, !event.Unsettled)
	default:
		return false
	}
	return true
}
