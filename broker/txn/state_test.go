package txn

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// Every pair of states: legal exactly when Kafka's table lists it, and an
// illegal move fails with ErrInvalidTxnState and leaves m unchanged.
func TestTransitionTable(t *testing.T) {
	legal := map[[2]State]bool{}
	for _, pair := range [][2]State{
		{StateEmpty, StateEmpty}, {StateCompleteCommit, StateEmpty}, {StateCompleteAbort, StateEmpty},
		{StateOngoing, StateOngoing}, {StateEmpty, StateOngoing}, {StateCompleteCommit, StateOngoing}, {StateCompleteAbort, StateOngoing},
		{StateOngoing, StatePrepareCommit},
		{StateOngoing, StatePrepareAbort}, {StatePrepareEpochFence, StatePrepareAbort},
		{StatePrepareCommit, StateCompleteCommit},
		{StatePrepareAbort, StateCompleteAbort},
		{StateEmpty, StateDead}, {StateCompleteCommit, StateDead}, {StateCompleteAbort, StateDead},
		{StateOngoing, StatePrepareEpochFence},
	} {
		legal[pair] = true
	}
	now := time.UnixMilli(5000)
	for from := StateEmpty; from < stateCount; from++ {
		for to := StateEmpty; to < stateCount; to++ {
			m := Metadata{TransactionalID: "t", ProducerID: 1, ProducerEpoch: 3, State: from,
				Partitions: []TopicPartition{tp("a", 0)}, StartTime: 100, LastUpdate: 100,
				NextProducerID: noProducerID, PreviousProducerID: noProducerID}
			before := m.clone()
			next, err := m.transition(to, now, nil)
			if legal[[2]State{from, to}] {
				if err != nil {
					t.Errorf("%s → %s: %v, want legal", from, to, err)
					continue
				}
				if next.State != to || next.LastUpdate != 5000 {
					t.Errorf("%s → %s: got state %s last update %d", from, to, next.State, next.LastUpdate)
				}
			} else if !errors.Is(err, ErrInvalidTxnState) {
				t.Errorf("%s → %s: error %v, want ErrInvalidTxnState", from, to, err)
			}
			if m.State != before.State || !slices.Equal(m.Partitions, before.Partitions) || m.LastUpdate != before.LastUpdate {
				t.Errorf("%s → %s modified the receiver", from, to)
			}
		}
	}
	bad := Metadata{State: State(42)}
	if _, err := bad.transition(StateEmpty, now, nil); !errors.Is(err, ErrInvalidTxnState) {
		t.Errorf("unknown state: %v", err)
	}
}

// The bookkeeping each transition does: starting a transaction, closing
// one, and the producer id rotation at Complete*.
func TestTransitionBookkeeping(t *testing.T) {
	now := time.UnixMilli(9000)
	m := Metadata{TransactionalID: "t", ProducerID: 1, ProducerEpoch: 2, State: StateCompleteCommit,
		Partitions: nil, StartTime: noTimestamp, NextProducerID: noProducerID, PreviousProducerID: noProducerID}
	open, err := m.transition(StateOngoing, now, func(next *Metadata) { next.addPartitions([]TopicPartition{tp("b", 1), tp("a", 2), tp("b", 1)}) })
	if err != nil {
		t.Fatal(err)
	}
	if open.StartTime != 9000 || !slices.Equal(open.Partitions, []TopicPartition{tp("a", 2), tp("b", 1)}) {
		t.Fatalf("open: start %d partitions %v", open.StartTime, open.Partitions)
	}
	more, _ := open.transition(StateOngoing, now.Add(time.Second), func(next *Metadata) { next.addPartitions([]TopicPartition{tp("a", 0)}) })
	if more.StartTime != 9000 || len(more.Partitions) != 3 {
		t.Fatalf("adding to an open transaction must keep the start: %+v", more)
	}
	prepared, _ := more.transition(StatePrepareCommit, now, func(next *Metadata) { next.NextProducerID = 77 })
	done, err := prepared.transition(StateCompleteCommit, now, nil)
	if err != nil {
		t.Fatal(err)
	}
	if done.ProducerID != 77 || done.ProducerEpoch != 0 || done.PreviousProducerID != 1 || done.NextProducerID != noProducerID ||
		len(done.Partitions) != 0 || done.StartTime != noTimestamp {
		t.Fatalf("complete with rotation: %+v", done)
	}
}

// decisionBase is producer 10 at epoch 5 with partition a-0, in state.
func decisionBase(state State) Metadata {
	return Metadata{TransactionalID: "t", ProducerID: 10, ProducerEpoch: 5, LastProducerEpoch: noProducerEpoch,
		PreviousProducerID: noProducerID, NextProducerID: noProducerID, State: state,
		Partitions: []TopicPartition{tp("a", 0)}}
}

// What InitProducerId does in each state, or which error it returns.
func TestInitDecision(t *testing.T) {
	base := decisionBase
	{
		for _, tc := range []struct {
			state    State
			expected *ProducerIDEpoch
			last     int16
			action   initAction
			err      error
		}{
			{StateEmpty, nil, -1, initBump, nil},
			{StateCompleteCommit, nil, -1, initBump, nil},
			{StateCompleteAbort, nil, -1, initBump, nil},
			{StateOngoing, nil, -1, initFence, nil},
			{StatePrepareCommit, nil, -1, initWait, nil},
			{StatePrepareAbort, nil, -1, initWait, nil},
			{StateDead, nil, -1, 0, ErrConcurrentTransactions},
			{StateEmpty, &ProducerIDEpoch{10, 5}, -1, initBump, nil},
			{StateEmpty, &ProducerIDEpoch{10, 4}, 4, initRetry, nil},
			{StateEmpty, &ProducerIDEpoch{10, 4}, -1, 0, ErrProducerFenced},
			{StateEmpty, &ProducerIDEpoch{11, 5}, -1, 0, ErrProducerFenced},
			{StateEmpty, &ProducerIDEpoch{10, -1}, -1, 0, ErrInvalidRequest},
			{StateOngoing, &ProducerIDEpoch{10, 5}, -1, initFence, nil},
		} {
			m := base(tc.state)
			m.LastProducerEpoch = tc.last
			action, err := m.initDecision(tc.expected)
			if !errors.Is(err, tc.err) || (err == nil && action != tc.action) {
				t.Errorf("%s expected %+v: action %d err %v, want %d %v", tc.state, tc.expected, action, err, tc.action, tc.err)
			}
		}
	}
}

// What AddPartitionsToTxn does in each state, or which error it returns.
func TestAddDecision(t *testing.T) {
	base := decisionBase
	{
		for _, tc := range []struct {
			state      State
			pid        int64
			epoch      int16
			partitions []TopicPartition
			changed    bool
			err        error
		}{
			{StateEmpty, 10, 5, []TopicPartition{tp("a", 0)}, true, nil},
			{StateCompleteAbort, 10, 5, []TopicPartition{tp("a", 0)}, true, nil},
			{StateOngoing, 10, 5, []TopicPartition{tp("a", 0)}, false, nil},
			{StateOngoing, 10, 5, []TopicPartition{tp("a", 1)}, true, nil},
			{StatePrepareCommit, 10, 5, []TopicPartition{tp("a", 1)}, false, ErrConcurrentTransactions},
			{StatePrepareAbort, 10, 5, []TopicPartition{tp("a", 1)}, false, ErrConcurrentTransactions},
			{StateOngoing, 10, 4, []TopicPartition{tp("a", 1)}, false, ErrProducerFenced},
			{StateOngoing, 10, 6, []TopicPartition{tp("a", 1)}, false, ErrProducerFenced},
			{StateOngoing, 11, 5, []TopicPartition{tp("a", 1)}, false, ErrInvalidProducerIDMapping},
		} {
			m := base(tc.state)
			_, changed, err := m.addParticipants(time.UnixMilli(1), tc.pid, tc.epoch, tc.partitions, "")
			if !errors.Is(err, tc.err) || changed != tc.changed {
				t.Errorf("%s pid %d epoch %d: changed %v err %v, want %v %v", tc.state, tc.pid, tc.epoch, changed, err, tc.changed, tc.err)
			}
		}
	}
}

// What EndTxn does in each state (classic and transaction version 2), or
// which error it returns.
func TestEndDecision(t *testing.T) {
	base := decisionBase
	{
		for _, tc := range []struct {
			state    State
			epoch    int16
			commit   bool
			version2 bool
			action   endAction
			err      error
		}{
			{StateOngoing, 5, true, false, endPrepare, nil},
			{StateOngoing, 5, false, false, endPrepare, nil},
			{StateOngoing, 4, true, false, 0, ErrProducerFenced},
			{StateCompleteCommit, 5, true, false, endDone, nil},
			{StateCompleteCommit, 5, false, false, 0, ErrInvalidTxnState},
			{StateCompleteAbort, 5, false, false, endDone, nil},
			{StateCompleteAbort, 5, true, false, 0, ErrInvalidTxnState},
			{StatePrepareCommit, 5, true, false, 0, ErrConcurrentTransactions},
			{StatePrepareCommit, 5, false, false, 0, ErrInvalidTxnState},
			{StatePrepareAbort, 5, false, false, 0, ErrConcurrentTransactions},
			{StatePrepareAbort, 5, true, false, 0, ErrInvalidTxnState},
			{StatePrepareAbort, 4, false, false, 0, ErrProducerFenced},
			{StateEmpty, 5, true, false, 0, ErrInvalidTxnState},
			{StateEmpty, 5, false, false, 0, ErrInvalidTxnState},
			// Transaction version 2: LastProducerEpoch is 4 in these rows.
			{StateOngoing, 5, true, true, endPrepare, nil},
			{StateCompleteCommit, 4, true, true, endDone, nil},
			{StateCompleteCommit, 4, false, true, 0, ErrInvalidTxnState},
			{StatePrepareCommit, 4, true, true, 0, ErrConcurrentTransactions},
			{StateCompleteCommit, 5, true, true, 0, ErrInvalidTxnState},
			{StateCompleteCommit, 5, false, true, endAbortEmpty, nil},
			{StateEmpty, 5, false, true, endAbortEmpty, nil},
			{StateCompleteCommit, 3, true, true, 0, ErrProducerFenced},
		} {
			m := base(tc.state)
			if tc.version2 {
				m.LastProducerEpoch = 4
			}
			action, err := m.endDecision(10, tc.epoch, tc.commit, tc.version2)
			if !errors.Is(err, tc.err) || (err == nil && action != tc.action) {
				t.Errorf("%s epoch %d commit %v v2 %v: action %d err %v, want %d %v", tc.state, tc.epoch, tc.commit, tc.version2, action, err, tc.action, tc.err)
			}
		}
		m := base(StateOngoing)
		if _, err := m.endDecision(11, 5, true, false); !errors.Is(err, ErrInvalidProducerIDMapping) {
			t.Errorf("other producer id: %v", err)
		}
	}
}

// Epoch exhaustion: InitProducerId at the last usable epoch moves to a new
// producer id at epoch 0; a fence at the largest epoch does not overflow.
func TestEpochExhaustion(t *testing.T) {
	m := Metadata{TransactionalID: "t", ProducerID: 10, ProducerEpoch: maxProducerEpoch - 1, LastProducerEpoch: -1,
		PreviousProducerID: -1, NextProducerID: -1, State: StateCompleteAbort}
	next, err := m.bumpForInit(time.UnixMilli(1), 1000, nil, func() (int64, error) { return 99, nil })
	if err != nil {
		t.Fatal(err)
	}
	if next.ProducerID != 99 || next.ProducerEpoch != 0 || next.PreviousProducerID != 10 || next.State != StateEmpty {
		t.Fatalf("rotation: %+v", next)
	}
	m.ProducerEpoch = 100
	next, _ = m.bumpForInit(time.UnixMilli(1), 1000, nil, func() (int64, error) { t.Fatal("no new id needed"); return 0, nil })
	if next.ProducerID != 10 || next.ProducerEpoch != 101 {
		t.Fatalf("bump: %+v", next)
	}
	m.State, m.ProducerEpoch = StateOngoing, maxProducerEpoch
	fenced, err := m.fenceAndPrepareAbort(time.UnixMilli(1), false)
	if err != nil || fenced.ProducerEpoch != maxProducerEpoch || fenced.State != StatePrepareAbort {
		t.Fatalf("fence at max epoch: %+v %v", fenced, err)
	}
}
