package worker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/loadgen/verify"
)

// TestWorkerPollEventsReplay: what a worker subprocess reports of its
// polls, decoded and replayed by the runner, gives the tracker the same
// verdict as the worker's own tracker would, big polls split over several
// lines included; an ack event carries its position and writer.
func TestWorkerPollEventsReplay(t *testing.T) {
	var out bytes.Buffer
	reporter := NewReporter(&out)
	direct := verify.NewPollTracker("direct", nil, 0)
	both := []verify.PollSink{reporter.PollSink(), direct}
	records := func(from, to int64) []verify.PolledRecord {
		var polled []verify.PolledRecord
		for offset := from; offset < to; offset++ {
			polled = append(polled, verify.PolledRecord{Offset: offset, Record: verify.NewRecordID(1, uint64(offset))})
		}
		return polled
	}
	for _, sink := range both {
		sink.Assigned([]int32{0, 1})
		sink.Polled(0, records(0, MaxPolledPerEvent+10), true) // two lines
		sink.Polled(0, records(MaxPolledPerEvent+12, MaxPolledPerEvent+20), true)
		sink.Polled(0, records(5, 8), true) // back
		sink.Revoked([]int32{0})
		sink.Assigned([]int32{0})
		sink.Polled(0, records(3, 4), false)
		sink.Rewound(nil)
		sink.Polled(1, records(0, 2), true)
	}
	reporter.RecordAcknowledged(7, verify.Ack{Partition: 2, Offset: 41, Writer: verify.Writer{ProducerID: 1000, ProducerEpoch: 3}})

	replayed := verify.NewPollTracker("replayed", nil, 0)
	var ack Event
	lines := 0
	for _, event := range decodeEvents(t, out.Bytes(), false) {
		lines++
		if !ReplayPoll(replayed, event) {
			ack = event
		}
	}
	if lines != 11 {
		t.Errorf("%d lines, want 10 poll events (9 calls, one poll split in two) and the ack", lines)
	}
	want, got := verify.JudgePolls([]*verify.PollTracker{direct}, verify.EveryOffset(map[int32]int64{0: 1 << 20})),
		verify.JudgePolls([]*verify.PollTracker{replayed}, verify.EveryOffset(map[int32]int64{0: 1 << 20}))
	if got.Polled != want.Polled || got.Skips != want.Skips || got.NonMonotonic != want.NonMonotonic || want.Skips != 2 || want.NonMonotonic != 1 {
		t.Errorf("replayed %+v, direct %+v (want 2 skips, 1 move back)", got, want)
	}
	at := ack.Ack("exactly-p0")
	if ack.Event != "ack" || ack.Seq != 7 || at.Partition != 2 || at.Offset != 41 || at.ProducerID != 1000 || at.ProducerEpoch != 3 ||
		at.TransactionalID != "exactly-p0" {
		t.Errorf("ack event %+v: %+v", ack, at)
	}
}

// Serve runs the spec's role with the runner's crash command noted and
// its context ended when stdin closes; a role's error becomes a fatal
// event, and so does a role it does not know.
func TestServeRunsTheRole(t *testing.T) {
	stdinReader, stdinWriter := io.Pipe()
	var out bytes.Buffer
	crashes := make(chan int, 1)
	roles := map[string]Role{"test": func(ctx context.Context, spec Spec, reporter *Reporter, crash *CrashPoint) error {
		reporter.Emit(Event{Event: "ready", Message: spec.ClientID})
		for deadline := time.Now().Add(10 * time.Second); crash.Load() == CrashNone && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		crashes <- crash.Load()
		<-ctx.Done() // stdin closed
		return errors.New("role failed")
	}}
	done := make(chan error, 1)
	go func() {
		done <- Serve(nil, stdinReader, &out, roles)
	}()
	if _, err := io.WriteString(stdinWriter, `{"protocol":2,"spec":{"role":"test","client_id":"c1"}}`+"\n"+CommandCrashInTransaction+"\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case point := <-crashes:
		if point != CrashInTransaction {
			t.Errorf("crash point %d, want %d", point, CrashInTransaction)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the role never saw the crash command")
	}
	stdinWriter.Close()
	if err := <-done; err == nil || err.Error() != "role failed" {
		t.Fatalf("Serve returned %v", err)
	}
	events := decodeEvents(t, out.Bytes(), true)
	if len(events) != 2 || events[0].Event != "ready" || events[0].Message != "c1" || events[1].Event != "fatal" || events[1].Message != "role failed" {
		t.Errorf("events %+v", events)
	}

	out.Reset()
	err := Serve(nil, strings.NewReader(`{"protocol":2,"spec":{"role":"other"}}`+"\n"), &out, roles)
	if err == nil || !strings.Contains(err.Error(), `worker role "other" is not one of test`) || !strings.Contains(out.String(), `"e":"fatal"`) {
		t.Errorf("unknown role: %v, output %q", err, out.String())
	}
}

// decodeEvents decodes a worker's output: its hello (when withHello),
// then event frames only.
func decodeEvents(t *testing.T, output []byte, withHello bool) []Event {
	t.Helper()
	in := bufio.NewReader(bytes.NewReader(output))
	if withHello {
		if _, err := readHello(in); err != nil {
			t.Fatal(err)
		}
	}
	var events []Event
	for {
		kind, payload, err := readFrame(in)
		if errors.Is(err, io.EOF) {
			return events
		}
		if err != nil || kind != frameEvent {
			t.Fatalf("frame %q: %v", kind, err)
		}
		var event Event
		if err := json.Unmarshal(payload, &event); err != nil {
			t.Fatalf("event %q: %v", payload, err)
		}
		events = append(events, event)
	}
}
