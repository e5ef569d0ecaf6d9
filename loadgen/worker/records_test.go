package worker

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/exactly-eos/exactly/loadgen/verify"
)

// opRecorder is a RecordLog noting every call as text.
type opRecorder struct {
	producer uint32
	ops      *[]string
}

func (r opRecorder) RecordSent(seq uint64, fate verify.Fate) error {
	*r.ops = append(*r.ops, fmt.Sprintf("p%d sent %d fate %d", r.producer, seq, fate))
	return nil
}

func (r opRecorder) RecordAcknowledged(seq uint64, at verify.Ack) {
	*r.ops = append(*r.ops, fmt.Sprintf("p%d ack %d at %d/%d by %q %d/%d", r.producer, seq, at.Partition, at.Offset,
		at.TransactionalID, at.ProducerID, at.ProducerEpoch))
}

func (r opRecorder) RecordErrored(seq uint64) {
	*r.ops = append(*r.ops, fmt.Sprintf("p%d err %d", r.producer, seq))
}

func (r opRecorder) TransactionEnding(first, end uint64) {
	*r.ops = append(*r.ops, fmt.Sprintf("p%d ending [%d,%d)", r.producer, first, end))
}

func (r opRecorder) RecordTransactionEnd(first, end uint64, outcome verify.TransactionOutcome) {
	*r.ops = append(*r.ops, fmt.Sprintf("p%d end [%d,%d) %d", r.producer, first, end, outcome))
}

// TestRecordStreamRoundTrip: random outcomes of several producers, taken
// in batches at random points, decode to the same calls in the same order
// (the deltas restart with each batch); a batch's producer the runner did
// not give the worker is refused.
func TestRecordStreamRoundTrip(t *testing.T) {
	for seed := range uint64(50) {
		random := rand.New(rand.NewPCG(seed, 7))
		stream := NewRecordStream()
		var want, got []string
		logs := map[uint32]RecordLog{}
		sinks := map[uint32]RecordLog{}
		for _, producer := range []uint32{3, 4, 1 << 20} {
			logs[producer] = stream.Producer(producer)
			sinks[producer] = opRecorder{producer: producer, ops: &got}
		}
		apply := func() {
			if batch := stream.Take(); batch != nil {
				if err := ApplyRecords(batch, func(producer uint32) RecordLog { return sinks[producer] }); err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
			}
		}
		wantLog := func(producer uint32) opRecorder { return opRecorder{producer: producer, ops: &want} }
		next := map[uint32]uint64{}
		for range 2000 {
			producers := []uint32{3, 4, 1 << 20}
			producer := producers[random.IntN(len(producers))]
			seq := random.Uint64N(next[producer] + 1)
			switch random.IntN(6) {
			case 0, 1:
				fate := verify.Fate(random.IntN(2))
				_ = logs[producer].RecordSent(next[producer], fate)
				_ = wantLog(producer).RecordSent(next[producer], fate)
				next[producer]++
			case 2:
				at := verify.Ack{Partition: int32(random.IntN(4)), Offset: random.Int64N(1 << 40),
					Writer: verify.Writer{TransactionalID: []string{"", "t-a", "t-b"}[random.IntN(3)],
						ProducerID: random.Int64N(5) - 1, ProducerEpoch: int16(random.IntN(3))}}
				if random.IntN(4) == 0 {
					at.Offset = verify.UnknownOffset
					at.Partition = 0
				}
				logs[producer].RecordAcknowledged(seq, at)
				wantLog(producer).RecordAcknowledged(seq, at)
			case 3:
				logs[producer].RecordErrored(seq)
				wantLog(producer).RecordErrored(seq)
			case 4:
				logs[producer].TransactionEnding(seq, next[producer])
				wantLog(producer).TransactionEnding(seq, next[producer])
			case 5:
				outcome := verify.TransactionOutcome(random.IntN(3))
				logs[producer].RecordTransactionEnd(seq, next[producer], outcome)
				wantLog(producer).RecordTransactionEnd(seq, next[producer], outcome)
			}
			if random.IntN(100) == 0 {
				apply()
			}
		}
		apply()
		if !reflect.DeepEqual(got, want) {
			for i := range min(len(got), len(want)) {
				if got[i] != want[i] {
					t.Fatalf("seed %d: op %d decoded as %q, want %q", seed, i, got[i], want[i])
				}
			}
			t.Fatalf("seed %d: %d ops decoded, want %d", seed, len(got), len(want))
		}
	}
	stream := NewRecordStream()
	_ = stream.Producer(9).RecordSent(0, verify.FateCommit)
	err := ApplyRecords(stream.Take(), func(uint32) RecordLog { return nil })
	if err == nil || !strings.Contains(err.Error(), "producer 9, which the worker does not run") {
		t.Errorf("a stranger's records: %v", err)
	}
}

// FuzzApplyRecords: no batch, however corrupt, panics the decoder; a
// truncated batch is an error.
func FuzzApplyRecords(f *testing.F) {
	stream := NewRecordStream()
	log := stream.Producer(2)
	_ = log.RecordSent(0, verify.FateCommit)
	log.RecordAcknowledged(0, verify.Ack{Partition: 1, Offset: 5, Writer: verify.Writer{TransactionalID: "t", ProducerID: 1000}})
	log.RecordErrored(0)
	log.TransactionEnding(0, 1)
	log.RecordTransactionEnd(0, 1, verify.TransactionAborted)
	good := stream.Take()
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add([]byte{opAck, 2, 0, ackNewWriterName, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, batch []byte) {
		var ops []string
		_ = ApplyRecords(batch, func(producer uint32) RecordLog { return opRecorder{producer: producer, ops: &ops} })
	})
}

// FuzzReadFrames: a worker's output, however corrupt, decodes to frames
// or an error, never a panic or an allocation past maxFrame.
func FuzzReadFrames(f *testing.F) {
	f.Add(appendFrame(appendFrame(nil, frameHello, []byte(`{"protocol":2}`)), frameEvent, []byte(`{"e":"ready"}`)))
	f.Add([]byte("bash: exactly: command not found\n"))
	f.Add([]byte{frameRecords, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, output []byte) {
		in := bufio.NewReader(bytes.NewReader(output))
		if _, err := readHello(in); err != nil {
			return
		}
		for {
			if _, _, err := readFrame(in); err != nil {
				return
			}
		}
	})
}

// A worker is started by a command template: {host} and {i} expand per
// worker, and the hosts are used in turn.
func TestLaunchCommandTemplate(t *testing.T) {
	launch := Launch{Exec: []string{"ssh", "{host}", "exactly", "loadgen", "worker", "--name=w{i}"}, Hosts: []string{"a", "b"}}
	for index, want := range []string{"ssh a exactly loadgen worker --name=w0", "ssh b exactly loadgen worker --name=w1",
		"ssh a exactly loadgen worker --name=w2"} {
		if got := strings.Join(launch.Command(index), " "); got != want {
			t.Errorf("worker %d: %q, want %q", index, got, want)
		}
	}
	if got := (Launch{Path: "/bin/exactly", Args: []string{"loadgen", "worker"}}).Command(5); !reflect.DeepEqual(got, []string{"/bin/exactly", "loadgen", "worker"}) {
		t.Errorf("local launch: %q", got)
	}
}

// The handshake refuses, in one line each, a worker of another protocol
// version, a command that is not a worker at all, and (worker side) a
// runner of another version.
func TestHandshakeRefusals(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "old-worker")
	hello, _ := json.Marshal(Hello{Protocol: 1, Version: "exactly v0.1.0"})
	if err := os.WriteFile(old, appendFrame(nil, frameHello, hello), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		exec []string
		want string
	}{
		{"older worker", []string{"sh", "-c", "cat " + old + "; cat >/dev/null"},
			"it speaks worker protocol 1 and this load generator 2: run the same exactly version on every worker (worker: exactly v0.1.0)"},
		{"not a worker", []string{"sh", "-c", "echo Welcome to host1; cat >/dev/null"},
			`it did not answer the handshake of protocol 2; its output began "Welcome to host1\n"`},
		{"missing binary", []string{"sh", "-c", "echo 'sh: 1: exactly: not found' >&2; exit 127"},
			"it wrote nothing before its output ended; stderr: sh: 1: exactly: not found"},
	}
	for _, c := range cases {
		process, err := StartWith(Launch{Exec: c.exec}, 0, Spec{Role: RoleLoad}, Handlers{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		select {
		case <-process.Exited():
		case <-time.After(10 * time.Second):
			process.Stop(time.Second)
			t.Fatalf("%s: the worker did not end", c.name)
		}
		failure := process.Failure()
		if !strings.Contains(failure, c.want) || strings.Contains(failure, "\n\n") {
			t.Errorf("%s: failure %q, want it to say %q", c.name, failure, c.want)
		}
	}

	var out bytes.Buffer
	err := Serve(nil, strings.NewReader(`{"protocol":3,"spec":{"role":"load"}}`+"\n"), &out, nil)
	if err == nil || !strings.Contains(err.Error(), "the runner speaks worker protocol 3 and this worker 2") {
		t.Errorf("a runner of another version: %v", err)
	}
}

// A histogram survives the sparse encoding: same count, same
// percentiles; another geometry and corrupt input are refused.
func TestHistogramRoundTrip(t *testing.T) {
	like := hdrhistogram.New(1, 600_000_000, 3)
	h := hdrhistogram.New(1, 600_000_000, 3)
	random := rand.New(rand.NewPCG(1, 2))
	for range 100_000 {
		_ = h.RecordValue(1 + random.Int64N(5_000_000))
	}
	_ = h.RecordValue(599_000_000)
	decoded, err := DecodeHistogram(EncodeHistogram(h), like)
	if err != nil {
		t.Fatal(err)
	}
	if !decoded.Equals(h) {
		t.Errorf("decoded histogram differs: count %d p99 %d, want %d and %d", decoded.TotalCount(), decoded.ValueAtQuantile(99),
			h.TotalCount(), h.ValueAtQuantile(99))
	}
	if _, err := DecodeHistogram(EncodeHistogram(hdrhistogram.New(1, 1000, 2)), like); err == nil {
		t.Error("a histogram of another geometry was accepted")
	}
	encoded := EncodeHistogram(h)
	if _, err := DecodeHistogram(encoded[:len(encoded)-1], like); err == nil {
		t.Error("a truncated histogram was accepted")
	}
}

// FuzzDecodeHistogram: no input panics the histogram decoder.
func FuzzDecodeHistogram(f *testing.F) {
	like := hdrhistogram.New(1, 600_000_000, 3)
	h := hdrhistogram.New(1, 600_000_000, 3)
	_ = h.RecordValue(1500)
	f.Add(EncodeHistogram(h))
	f.Fuzz(func(t *testing.T, encoded []byte) {
		_, _ = DecodeHistogram(encoded, like)
	})
}

func BenchmarkHistogramEncoding(b *testing.B) {
	h := hdrhistogram.New(1, 600_000_000, 3)
	random := rand.New(rand.NewPCG(1, 2))
	for range 100_000 {
		_ = h.RecordValue(1 + random.Int64N(50_000))
	}
	b.Run("sparse", func(b *testing.B) {
		for b.Loop() {
			_ = EncodeHistogram(h)
		}
	})
	b.Run("v2-deflate", func(b *testing.B) {
		for b.Loop() {
			_, _ = h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
		}
	})
}

// A report the runner refuses (here a summary its handler rejects) ends
// the worker as failed, with the reason.
func TestRefusedReportFailsTheWorker(t *testing.T) {
	output := filepath.Join(t.TempDir(), "worker-output")
	hello, _ := json.Marshal(Hello{Protocol: Protocol})
	frames := appendFrame(appendFrame(nil, frameHello, hello), frameSummary, []byte(`{"acked":5}`))
	if err := os.WriteFile(output, frames, 0o644); err != nil {
		t.Fatal(err)
	}
	var acked int64
	process, err := StartWith(Launch{Exec: []string{"sh", "-c", "cat " + output}}, 0, Spec{Role: RoleLoad}, Handlers{
		Summary: func(summary Summary) error {
			acked += summary.Acked
			return fmt.Errorf("a summary whose produce_ack histogram does not decode")
		}})
	if err != nil {
		t.Fatal(err)
	}
	<-process.Exited()
	if failure := process.Failure(); acked != 5 || !strings.Contains(failure, "a summary whose produce_ack histogram does not decode") {
		t.Errorf("acked %d, failure %q", acked, failure)
	}
}
