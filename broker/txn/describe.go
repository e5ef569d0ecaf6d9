package txn

import (
	"context"
	"regexp"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeTransactions (key 65), version 0: the state, timeout, start
// time, producer id/epoch and participants of each transactional id;
// TRANSACTIONAL_ID_NOT_FOUND for ids this coordinator does not hold.
//
// ListTransactions (key 66), versions 0–2: the transactional ids, filtered
// by state names (unknown names are echoed in UnknownStateFilters), by
// producer id, v1+ by running longer than DurationFilterMillis (only open
// transactions), v2+ by a regular expression on the id.

// DescribeTransactions serves a DescribeTransactions request. It reads the
// published states and takes no transaction's lock.
func (c *Coordinator) DescribeTransactions(_ context.Context, req *kmsg.DescribeTransactionsRequest) *kmsg.DescribeTransactionsResponse {
	resp := kmsg.NewPtrDescribeTransactionsResponse()
	resp.Version = req.Version
	closed := c.isClosed()
	for _, id := range req.TransactionalIDs {
		state := kmsg.NewDescribeTransactionsResponseTransactionState()
		state.TransactionalID = id
		m := c.snapshot(id)
		switch {
		case closed:
			state.ErrorCode = kerr.NotCoordinator.Code
		case m == nil:
			state.ErrorCode = kerr.TransactionalIDNotFound.Code
		default:
			state.State = m.State.String()
			state.TimeoutMillis = m.TimeoutMs
			state.StartTimestamp = m.StartTime
			state.ProducerID = m.ProducerID
			state.ProducerEpoch = m.ProducerEpoch
			for _, tp := range m.Partitions {
				last := len(state.Topics) - 1
				if last < 0 || state.Topics[last].Topic != tp.Topic {
					state.Topics = append(state.Topics, kmsg.DescribeTransactionsResponseTransactionStateTopic{Topic: tp.Topic})
					last++
				}
				state.Topics[last].Partitions = append(state.Topics[last].Partitions, tp.Partition)
			}
		}
		resp.TransactionStates = append(resp.TransactionStates, state)
	}
	return resp
}

// ListTransactions serves a ListTransactions request.
func (c *Coordinator) ListTransactions(_ context.Context, req *kmsg.ListTransactionsRequest) *kmsg.ListTransactionsResponse {
	resp := kmsg.NewPtrListTransactionsResponse()
	resp.Version = req.Version
	if c.isClosed() {
		resp.ErrorCode = kerr.NotCoordinator.Code
		return resp
	}
	states := make(map[State]bool)
	for _, name := range req.StateFilters {
		state, ok := stateByName(name)
		if !ok {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, name)
			continue
		}
		states[state] = true
	}
	if len(req.StateFilters) > 0 && len(states) == 0 {
		return resp // only unknown states asked for: nothing matches
	}
	var pattern *regexp.Regexp
	if req.Version >= 2 && req.TransactionalIDPattern != nil && *req.TransactionalIDPattern != "" {
		compiled, err := regexp.Compile(*req.TransactionalIDPattern)
		if err != nil {
			resp.ErrorCode = kerr.InvalidRegularExpression.Code
			return resp
		}
		pattern = compiled
	}
	now := c.cfg.Now().UnixMilli()
	for _, m := range c.all() {
		switch {
		case len(states) > 0 && !states[m.State]:
		case len(req.ProducerIDFilters) > 0 && !slices.Contains(req.ProducerIDFilters, m.ProducerID):
		case req.Version >= 1 && req.DurationFilterMillis >= 0 && (m.StartTime == noTimestamp || now-m.StartTime <= req.DurationFilterMillis):
		case pattern != nil && !pattern.MatchString(m.TransactionalID):
		default:
			resp.TransactionStates = append(resp.TransactionStates, kmsg.ListTransactionsResponseTransactionState{
				TransactionalID: m.TransactionalID, ProducerID: m.ProducerID, TransactionState: m.State.String(),
			})
		}
	}
	slices.SortFunc(resp.TransactionStates, func(a, b kmsg.ListTransactionsResponseTransactionState) int {
		return strings.Compare(a.TransactionalID, b.TransactionalID)
	})
	return resp
}

// stateByName finds a state by the name String gives it.
func stateByName(name string) (State, bool) {
	for state := StateEmpty; state < stateCount; state++ {
		if state.String() == name {
			return state, true
		}
	}
	return 0, false
}

// isClosed reports whether Close was called.
func (c *Coordinator) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}
