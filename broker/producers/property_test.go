package producers

import (
	"errors"
	"math"
	"math/rand"
	"reflect"
	"testing"
	"time"
)

// The model: the expected verdict for a batch computed from the whole log
// (every batch ever written), with no cache, ring or per-producer state.
type outcome int

const (
	outcomeAppend outcome = iota
	outcomeDuplicate
	outcomeOutOfOrder
	outcomeFenced
	outcomeUnknown
	outcomeCount
)

func (o outcome) String() string {
	return [...]string{"append", "duplicate", "out-of-order", "fenced", "unknown"}[o]
}

// mine is every batch of b's producer in the log, in log order.
func modelVerdict(mine []Batch, b Batch) (outcome, Batch) {
	if b.ProducerID < 0 {
		return outcomeAppend, Batch{}
	}
	if len(mine) == 0 {
		if b.BaseSequence == 0 {
			return outcomeAppend, Batch{}
		}
		return outcomeUnknown, Batch{}
	}
	newest := mine[len(mine)-1]
	switch {
	case b.ProducerEpoch < newest.ProducerEpoch:
		return outcomeFenced, Batch{}
	case b.ProducerEpoch > newest.ProducerEpoch:
		if b.BaseSequence == 0 {
			return outcomeAppend, Batch{}
		}
		return outcomeOutOfOrder, Batch{}
	}
	// The 5 newest batches of the current epoch.
	for i, seen := len(mine)-1, 0; i >= 0 && seen < MaxCachedBatches && mine[i].ProducerEpoch == b.ProducerEpoch; i, seen = i-1, seen+1 {
		if mine[i].BaseSequence == b.BaseSequence && mine[i].LastSequence == b.LastSequence {
			return outcomeDuplicate, mine[i]
		}
	}
	if int64(b.BaseSequence) == (int64(newest.LastSequence)+1)%(math.MaxInt32+1) {
		return outcomeAppend, Batch{}
	}
	return outcomeOutOfOrder, Batch{}
}

func outcomeOf(verdict Verdict, err error) outcome {
	switch {
	case err == nil && verdict.Duplicate:
		return outcomeDuplicate
	case err == nil:
		return outcomeAppend
	case errors.Is(err, ErrOutOfOrderSequence):
		return outcomeOutOfOrder
	case errors.Is(err, ErrInvalidProducerEpoch):
		return outcomeFenced
	case errors.Is(err, ErrUnknownProducerID):
		return outcomeUnknown
	}
	return -1
}

// client is a simulated producer: its epoch, next sequence and everything
// it ever sent (so it can retry old batches, including stale ones).
type client struct {
	producerID int64
	epoch      int16
	next       int32
	sent       []Batch
}

// nextOperation draws a random batch: in-order sends, retries of recent
// (and not so recent) batches, gaps, old epochs, epoch bumps, huge batches
// that drive sequences through the int32 wrap, strangers, non-idempotent.
func nextOperation(random *rand.Rand, clients []*client) (Batch, *client) {
	c := clients[random.Intn(len(clients))]
	count := int32(1 + random.Intn(4))
	if random.Intn(8) == 0 {
		count = int32(1<<29 + random.Intn(1<<30)) // reach the wrap in a few batches
	}
	switch roll := random.Intn(100); {
	case roll < 45:
		return batch(c.producerID, c.epoch, c.next, count), c
	case roll < 75 && len(c.sent) > 0:
		back := 1 + random.Intn(min(8, len(c.sent)))
		return c.sent[len(c.sent)-back], c
	case roll < 82:
		return batch(c.producerID, c.epoch, LastSequence(c.next, 2+int32(random.Intn(3))), count), c
	case roll < 85 && c.epoch > 0:
		return batch(c.producerID, c.epoch-1, c.next, count), c
	case roll < 87:
		c.epoch++
		c.next = 0
		if random.Intn(4) == 0 {
			return batch(c.producerID, c.epoch, 1+int32(random.Intn(5)), count), c
		}
		return batch(c.producerID, c.epoch, 0, count), c
	case roll < 94:
		stranger := 1000 + int64(random.Intn(1000))
		return batch(stranger, 0, int32(random.Intn(2)), count), nil
	case roll < 96:
		return Batch{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, LastSequence: -1}, nil
	}
	return batch(c.producerID, c.epoch, c.next, count), c
}

func TestStateMachineAgainstModel(t *testing.T) {
	for _, seed := range []int64{1, 2, 3, 4} {
		random := rand.New(rand.NewSource(seed))
		clock := &fakeClock{now: time.Unix(1000, 0)}
		options := Options{ExpirationAge: time.Hour, Now: clock.Now}
		log := &testLog{state: NewPartitionState(options)}
		clients := []*client{{producerID: 1}, {producerID: 2}, {producerID: 3}}
		dir := t.TempDir()
		var seen [outcomeCount]int
		byProducer := make(map[int64][]Batch) // the log, indexed for the model
		for op := 0; op < 5000; op++ {
			b, sender := nextOperation(random, clients)
			want, original := modelVerdict(byProducer[b.ProducerID], b)
			verdict, written, err := log.produce(b)
			if written && b.ProducerID >= 0 {
				byProducer[b.ProducerID] = append(byProducer[b.ProducerID], log.batches[len(log.batches)-1])
			}
			got := outcomeOf(verdict, err)
			if got != want {
				t.Fatalf("seed %d op %d: batch %+v: got %v (%+v, %v), model says %v", seed, op, b, got, verdict, err, want)
			}
			seen[got]++
			if want == outcomeDuplicate && (verdict.FirstOffset != original.FirstOffset || verdict.LastOffset != original.LastOffset) {
				t.Fatalf("seed %d op %d: duplicate answered %d..%d, original at %d..%d", seed, op, verdict.FirstOffset, verdict.LastOffset, original.FirstOffset, original.LastOffset)
			}
			if sender != nil {
				sender.sent = append(sender.sent, b)
				if written && b.ProducerEpoch == sender.epoch {
					sender.next = int32((int64(b.LastSequence) + 1) % (math.MaxInt32 + 1))
				}
			}
			if op%700 == 0 {
				if err := log.state.WriteSnapshot(dir, log.next); err != nil {
					t.Fatal(err)
				}
			}
			if op%1100 == 1099 {
				log.state = restart(t, dir, log, options)
			}
		}
		for o := outcome(0); o < outcomeCount; o++ {
			if seen[o] < 20 {
				t.Errorf("seed %d: outcome %v happened only %d times; the generator does not exercise it", seed, o, seen[o])
			}
		}
		if wraps := checkLogInvariants(t, log.batches); wraps == 0 {
			t.Errorf("seed %d: no batch crossed the int32 sequence wrap", seed)
		}
	}
}

// restart loads the newest snapshot, replays the log after it, and checks
// the rebuilt state equals the live one.
func restart(t *testing.T, dir string, log *testLog, options Options) *PartitionState {
	t.Helper()
	restored, load, err := LoadLatestSnapshot(dir, log.next, options)
	if err != nil || !load.Found || len(load.Skipped) != 0 {
		t.Fatalf("load snapshot: %+v %v", load, err)
	}
	for _, b := range log.batches {
		if b.FirstOffset >= load.Offset {
			restored.Replay(b)
		}
	}
	if got, want := dumpState(restored), dumpState(log.state); !reflect.DeepEqual(got, want) {
		t.Fatalf("state after snapshot at %d + replay differs:\n got  %+v\n want %+v", load.Offset, got, want)
	}
	return restored
}

// entryDump is a producer entry with its batches in order, for comparison.
// The idle clock is left out: a snapshot stamps it, so it legitimately
// differs after a restart (TestSnapshotKeepsIdleClock checks it).
type entryDump struct {
	epoch                 int16
	batches               []batchMetadata
	coordinatorEpoch      int32
	currentTxnFirstOffset int64
}

func dumpState(s *PartitionState) map[int64]entryDump {
	dump := make(map[int64]entryDump, len(s.producers))
	for producerID, entry := range s.producers {
		d := entryDump{epoch: entry.epoch, coordinatorEpoch: entry.coordinatorEpoch, currentTxnFirstOffset: entry.currentTxnFirstOffset}
		for i := entry.count - 1; i >= 0; i-- {
			d.batches = append(d.batches, entry.batches[(entry.newest-i+MaxCachedBatches)%MaxCachedBatches])
		}
		dump[producerID] = d
	}
	return dump
}

// checkLogInvariants: per producer, epochs never decrease; within an epoch
// the sequences start at 0 and are contiguous (wrapping after MaxInt32), so
// every (producer, epoch, sequence) is written exactly once and in order.
// It returns how many batches crossed the int32 wrap.
func checkLogInvariants(t *testing.T, log []Batch) (wraps int) {
	t.Helper()
	type position struct {
		epoch int16
		next  int64
	}
	positions := make(map[int64]position)
	var offset int64
	for i, b := range log {
		if b.FirstOffset != offset || b.LastOffset < b.FirstOffset {
			t.Fatalf("log batch %d at %d..%d, expected to start at %d", i, b.FirstOffset, b.LastOffset, offset)
		}
		offset = b.LastOffset + 1
		if b.ProducerID < 0 {
			continue
		}
		at, known := positions[b.ProducerID]
		switch {
		case known && b.ProducerEpoch < at.epoch:
			t.Fatalf("log batch %d: producer %d epoch went back from %d to %d", i, b.ProducerID, at.epoch, b.ProducerEpoch)
		case !known || b.ProducerEpoch > at.epoch:
			at = position{epoch: b.ProducerEpoch}
		}
		if int64(b.BaseSequence) != at.next {
			t.Fatalf("log batch %d: producer %d epoch %d sequence %d, expected %d", i, b.ProducerID, b.ProducerEpoch, b.BaseSequence, at.next)
		}
		if b.LastSequence < b.BaseSequence || b.LastSequence == math.MaxInt32 {
			wraps++
		}
		at.next = (int64(b.LastSequence) + 1) % (math.MaxInt32 + 1)
		positions[b.ProducerID] = at
	}
	return wraps
}
