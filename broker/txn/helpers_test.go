package txn

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
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
	p, err := h.tryInit(id, timeoutMs, nil)
	if err != nil {
		h.t.Fatalf("InitProducerId(%q): %v", id, err)
	}
	return p
}

// tryInit is InitProducerId; current, if not nil, is the KIP-360 producer
// id and epoch the producer holds.
func (h *harness) tryInit(id string, timeoutMs int32, current *producer) (producer, error) {
	req := InitRequest{TransactionalID: id, TimeoutMs: timeoutMs}
	if current != nil {
		req.Current = &ProducerIDEpoch{ProducerID: current.pid, Epoch: current.epoch}
	}
	got, err := h.c.InitProducerID(context.Background(), req)
	return producer{id: id, pid: got.ProducerID, epoch: got.Epoch}, err
}

func (p producer) typed() Producer {
	return Producer{TransactionalID: p.id, ProducerID: p.pid, Epoch: p.epoch}
}

func (h *harness) addPartitions(p producer, partitions ...TopicPartition) []error {
	h.t.Helper()
	errs := h.c.AddPartitions(context.Background(), p.typed(), partitions)
	if len(errs) != len(partitions) {
		h.t.Fatalf("AddPartitions answered %d partitions, want %d", len(errs), len(partitions))
	}
	return errs
}

// add adds partitions and fails the test on any error.
func (h *harness) add(p producer, partitions ...TopicPartition) {
	h.t.Helper()
	for i, err := range h.addPartitions(p, partitions...) {
		if err != nil {
			h.t.Fatalf("AddPartitions %s: %v", partitions[i], err)
		}
	}
}

func (h *harness) addOffsets(p producer, group string) error {
	return h.c.AddOffsets(context.Background(), p.typed(), group)
}

// endTxn is a classic EndTxn (transaction version 0/1).
func (h *harness) endTxn(p producer, commit bool) error {
	_, err := h.c.EndTxn(context.Background(), EndRequest{Producer: p.typed(), Commit: commit})
	return err
}

// endTxnV2 is an EndTxn under transaction version 2 (KIP-890 part 2): the
// producer to continue with.
func (h *harness) endTxnV2(p producer, commit bool) (producer, error) {
	next, err := h.c.EndTxn(context.Background(), EndRequest{Producer: p.typed(), Commit: commit, TransactionVersion2: true})
	return producer{id: p.id, pid: next.ProducerID, epoch: next.Epoch}, err
}

// describe returns the id's state; the test fails if it is unknown.
func (h *harness) describe(id string) Metadata {
	h.t.Helper()
	m, err := h.c.DescribeTransaction(id)
	if err != nil {
		h.t.Fatalf("describe %q: %v", id, err)
	}
	return m
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

// wantErr fails unless err wraps want (nil: unless err is nil).
func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("%s: %v, want no error", what, err)
		}
		return
	}
	if !errors.Is(err, want) {
		t.Fatalf("%s: %v, want %v", what, err, want)
	}
}

func tp(topic string, partition int32) TopicPartition {
	return TopicPartition{Topic: topic, Partition: partition}
}
