package worker

import (
	"bufio"
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/exactly-eos/exactly/loadgen/verify"
)

// Reporter writes a worker's events, one line each, flushed at once so
// the runner sees them before it stops or kills the worker. Producer
// callbacks and the worker goroutine call it at once: mu guards out. It is
// a producer's record log (every outcome goes to stdout) and, through
// PollSink, a consumer's poll sink.
type Reporter struct {
	mu  sync.Mutex
	out *bufio.Writer
}

// NewReporter returns a reporter writing to w.
func NewReporter(w io.Writer) *Reporter { return &Reporter{out: bufio.NewWriter(w)} }

// Emit writes one event.
func (r *Reporter) Emit(event Event) {
	line, err := json.Marshal(event)
	if err != nil {
		return // cannot happen: the event has only plain fields
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.out.Write(append(line, '\n'))
	r.out.Flush()
}

// Assigned reports how many input partitions a consume worker holds.
func (r *Reporter) Assigned(count int) {
	r.Emit(Event{Event: "assigned", Count: int64(count)})
}

// PollSink is the sink of the worker consumer's polls: each call becomes
// a poll event.
func (r *Reporter) PollSink() verify.PollSink { return pollReport{reporter: r} }

// RecordSent reports a send.
func (r *Reporter) RecordSent(seq uint64, fate verify.Fate) error {
	r.Emit(Event{Event: "sent", Seq: seq, Time: time.Now().UnixNano()})
	return nil
}

// RecordAcknowledged reports an acknowledgement and where it landed.
func (r *Reporter) RecordAcknowledged(seq uint64, at verify.Ack) {
	r.Emit(Event{Event: "ack", Seq: seq, VerifyEvent: ackEvent(at)})
}

// RecordErrored reports a failed produce.
func (r *Reporter) RecordErrored(seq uint64) { r.Emit(Event{Event: "err", Seq: seq}) }

// TransactionEnding reports that a transaction's end begins.
func (r *Reporter) TransactionEnding(first, end uint64) {
	r.Emit(Event{Event: "ending", First: first, End: end, Time: time.Now().UnixNano()})
}

// RecordTransactionEnd reports a transaction's outcome.
func (r *Reporter) RecordTransactionEnd(first, end uint64, outcome verify.TransactionOutcome) {
	names := map[verify.TransactionOutcome]string{verify.TransactionCommitted: "committed",
		verify.TransactionAborted: "aborted", verify.TransactionUnknown: "unknown"}
	r.Emit(Event{Event: "end", First: first, End: end, Outcome: names[outcome]})
}

// TransactionOutcome is the transaction outcome an end event names.
func (e Event) TransactionOutcome() verify.TransactionOutcome {
	switch e.Outcome {
	case "aborted":
		return verify.TransactionAborted
	case "unknown":
		return verify.TransactionUnknown
	}
	return verify.TransactionCommitted
}
