package worker

import (
	"bufio"
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/exactly-eos/exactly/loadgen/verify"
)

// Reporter writes a worker's frames, each flushed at once so the runner
// sees it before it stops or kills the worker. Producer callbacks, the
// flusher and the worker goroutine call it at once: mu guards out and
// the stream counters. It is a producer's record log (every outcome goes
// to stdout as an event) and, through PollSink, a consumer's poll sink.
type Reporter struct {
	mu  sync.Mutex
	out *bufio.Writer
	// frame is the frame being written, reused.
	frame []byte
	// zstd compresses record batches (EncodeAll is safe for concurrent
	// use; mu serialises it anyway).
	zstd *zstd.Encoder
	// streamBytes counts the bytes written.
	streamBytes int64
}

// NewReporter returns a reporter writing to w.
func NewReporter(w io.Writer) *Reporter {
	encoder, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	if err != nil {
		panic(err) // only for invalid options
	}
	return &Reporter{out: bufio.NewWriterSize(w, 64<<10), zstd: encoder}
}

// write writes one frame and flushes; the caller holds mu.
func (r *Reporter) write(kind byte, payload []byte) {
	r.frame = appendFrame(r.frame[:0], kind, payload)
	r.out.Write(r.frame)
	r.out.Flush()
	r.streamBytes += int64(len(r.frame))
}

// hello writes the worker's first frame.
func (r *Reporter) hello(hello Hello) {
	payload, _ := json.Marshal(hello)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.write(frameHello, payload)
}

// Emit writes one event.
func (r *Reporter) Emit(event Event) {
	payload, err := json.Marshal(event)
	if err != nil {
		return // cannot happen: the event has only plain fields
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.write(frameEvent, payload)
}

// Records writes a batch of a RecordStream, compressed.
func (r *Reporter) Records(batch []byte) {
	if len(batch) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.write(frameRecords, r.zstd.EncodeAll(batch, nil))
}

// Summary writes a summary, with the bytes of the stream so far filled
// in.
func (r *Reporter) Summary(summary Summary) {
	r.mu.Lock()
	defer r.mu.Unlock()
	summary.StreamBytes = r.streamBytes
	payload, err := json.Marshal(summary)
	if err != nil {
		return // cannot happen: plain fields
	}
	r.write(frameSummary, payload)
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
