package txn

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// clock is an injected clock tests move by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.UnixMilli(1_700_000_000_000)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// sequentialIDs is a PIDSource counting from 1000.
type sequentialIDs struct {
	mu   sync.Mutex
	next int64
}

func (s *sequentialIDs) Next() (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next == 0 {
		s.next = 1000
	}
	s.next++
	return s.next - 1, nil
}

// markerCall is one WriteMarkers call.
type markerCall struct {
	ProducerID       int64
	ProducerEpoch    int16
	CoordinatorEpoch int32
	Commit           bool
	Partitions       []TopicPartition
	Failed           bool
}

// fakeMarkers records WriteMarkers calls and fails the first `failures`.
type fakeMarkers struct {
	mu       sync.Mutex
	calls    []markerCall
	failures int
	// block, if set, makes calls wait until it is closed (or ctx ends).
	block chan struct{}
}

var errMarkerWrite = errors.New("injected marker failure")

func (f *fakeMarkers) WriteMarkers(ctx context.Context, producerID int64, producerEpoch int16, coordinatorEpoch int32, commit bool, partitions []TopicPartition) error {
	f.mu.Lock()
	block := f.block
	f.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	call := markerCall{ProducerID: producerID, ProducerEpoch: producerEpoch, CoordinatorEpoch: coordinatorEpoch, Commit: commit, Partitions: slices.Clone(partitions)}
	if f.failures > 0 {
		f.failures--
		call.Failed = true
		f.calls = append(f.calls, call)
		return errMarkerWrite
	}
	f.calls = append(f.calls, call)
	return nil
}

// succeeded returns the successful calls.
func (f *fakeMarkers) succeeded() []markerCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []markerCall
	for _, call := range f.calls {
		if !call.Failed {
			out = append(out, call)
		}
	}
	return out
}

func (f *fakeMarkers) attempts() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

// offsetCall is one CompleteTxn call.
type offsetCall struct {
	Group         string
	ProducerID    int64
	ProducerEpoch int16
	Commit        bool
}

type fakeOffsets struct {
	mu    sync.Mutex
	calls []offsetCall
}

func (f *fakeOffsets) CompleteTxn(_ context.Context, group string, producerID int64, producerEpoch int16, commit bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, offsetCall{group, producerID, producerEpoch, commit})
	return nil
}

// harness is a coordinator with fakes around it.
type harness struct {
	t       *testing.T
	clock   *clock
	log     *MemoryLog
	ids     *sequentialIDs
	markers *fakeMarkers
	offsets *fakeOffsets
	cfg     Config
	c       *Coordinator
}

func testConfig(clk *clock) Config {
	return Config{
		CleanupInterval:    -1, // tests call Tick
		CompletionWait:     10 * time.Second,
		MarkerRetryBackoff: time.Millisecond,
		CoordinatorEpoch:   7,
		Now:                clk.Now,
	}
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	clk := newClock()
	h := &harness{t: t, clock: clk, log: NewMemoryLog(), ids: &sequentialIDs{}, markers: &fakeMarkers{}, offsets: &fakeOffsets{}, cfg: testConfig(clk)}
	h.start()
	return h
}

// start (re)creates the coordinator over the same log: a restart.
func (h *harness) start() {
	h.t.Helper()
	c, err := NewCoordinator(h.cfg, h.log, h.ids, h.markers, h.offsets)
	if err != nil {
		h.t.Fatalf("NewCoordinator: %v", err)
	}
	h.c = c
	h.t.Cleanup(func() { c.Close() })
}

// producer is a client's view of one producer instance.
type producer struct {
	id    string
	pid   int64
	epoch int16
}

func (h *harness) init(id string, timeoutMs int32) producer {
	h.t.Helper()
	p, code := h.tryInit(id, timeoutMs, 5, nil)
	if code != 0 {
		h.t.Fatalf("InitProducerId(%q): %v", id, kerr.ErrorForCode(code))
	}
	return p
}

func (h *harness) tryInit(id string, timeoutMs int32, version int16, expected *producer) (producer, int16) {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = version
	req.TransactionalID = &id
	req.TransactionTimeoutMillis = timeoutMs
	if expected != nil {
		req.ProducerID, req.ProducerEpoch = expected.pid, expected.epoch
	}
	resp := h.c.InitProducerID(context.Background(), req)
	return producer{id: id, pid: resp.ProducerID, epoch: resp.ProducerEpoch}, resp.ErrorCode
}

func (h *harness) addPartitions(p producer, version int16, partitions ...TopicPartition) []int16 {
	h.t.Helper()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = version
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = p.id, p.pid, p.epoch
	for _, tp := range partitions {
		topic := kmsg.AddPartitionsToTxnRequestTopic{Topic: tp.Topic, Partitions: []int32{tp.Partition}}
		req.Topics = append(req.Topics, topic)
	}
	resp := h.c.AddPartitionsToTxn(context.Background(), req)
	var codes []int16
	for _, topic := range resp.Topics {
		for _, partition := range topic.Partitions {
			codes = append(codes, partition.ErrorCode)
		}
	}
	if len(codes) != len(partitions) {
		h.t.Fatalf("AddPartitionsToTxn answered %d partitions, want %d", len(codes), len(partitions))
	}
	return codes
}

// add adds partitions and fails the test on any error.
func (h *harness) add(p producer, partitions ...TopicPartition) {
	h.t.Helper()
	for i, code := range h.addPartitions(p, 3, partitions...) {
		if code != 0 {
			h.t.Fatalf("AddPartitionsToTxn %s: %v", partitions[i], kerr.ErrorForCode(code))
		}
	}
}

func (h *harness) addOffsets(p producer, version int16, group string) int16 {
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	req.Version = version
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = p.id, p.pid, p.epoch, group
	return h.c.AddOffsetsToTxn(context.Background(), req).ErrorCode
}

func (h *harness) endTxn(p producer, version int16, commit bool) *kmsg.EndTxnResponse {
	req := kmsg.NewPtrEndTxnRequest()
	req.Version = version
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = p.id, p.pid, p.epoch, commit
	return h.c.EndTxn(context.Background(), req)
}

func (h *harness) describe(id string) kmsg.DescribeTransactionsResponseTransactionState {
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{id}
	return h.c.DescribeTransactions(context.Background(), req).TransactionStates[0]
}

// waitIdle waits for every completion, with a deadline.
func (h *harness) waitIdle() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.c.WaitIdle(ctx); err != nil {
		h.t.Fatal(err)
	}
}

func expectCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	wantCode := int16(0)
	if want != nil {
		wantCode = want.Code
	}
	if got != wantCode {
		t.Fatalf("%s: got %v, want %v", what, kerr.ErrorForCode(got), kerr.ErrorForCode(wantCode))
	}
}

func tp(topic string, partition int32) TopicPartition {
	return TopicPartition{Topic: topic, Partition: partition}
}
