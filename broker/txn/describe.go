package txn

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// DescribeTransactions (key 65): the state, timeout, start time, producer
// id/epoch and participants of a transactional id;
// ErrTransactionalIDNotFound for ids this coordinator does not hold.
//
// ListTransactions (key 66): the transactional ids, filtered by state
// names (unknown names are answered in UnknownStates), by producer id, by
// running longer than a duration (only open transactions), and by a
// regular expression on the id. Both read the published states and take
// no transaction's lock.

// DescribeTransaction returns a copy of the transactional id's durable
// state.
func (c *Coordinator) DescribeTransaction(transactionalID string) (Metadata, error) {
	if c.isClosed() {
		return Metadata{}, fmt.Errorf("describe transactional id %q: %w", transactionalID, c.refuse)
	}
	m := c.snapshot(transactionalID)
	if m == nil {
		return Metadata{}, fmt.Errorf("describe transactional id %q: %w", transactionalID, ErrTransactionalIDNotFound)
	}
	return m.clone(), nil
}

// ListTransactions lists the transactional ids filter selects.
func (c *Coordinator) ListTransactions(filter ListFilter) (ListResult, error) {
	var result ListResult
	if c.isClosed() {
		return result, fmt.Errorf("list transactions: %w", c.refuse)
	}
	states := make(map[State]bool)
	for _, name := range filter.States {
		state, ok := stateByName(name)
		if !ok {
			result.UnknownStates = append(result.UnknownStates, name)
			continue
		}
		states[state] = true
	}
	if len(filter.States) > 0 && len(states) == 0 {
		return result, nil // only unknown states asked for: nothing matches
	}
	var pattern *regexp.Regexp
	if filter.Pattern != "" {
		compiled, err := regexp.Compile(filter.Pattern)
		if err != nil {
			return result, fmt.Errorf("list transactions: pattern %q: %w: %v", filter.Pattern, ErrInvalidRegularExpression, err)
		}
		pattern = compiled
	}
	now := c.cfg.Now().UnixMilli()
	for _, m := range c.all() {
		switch {
		case len(states) > 0 && !states[m.State]:
		case len(filter.ProducerIDs) > 0 && !slices.Contains(filter.ProducerIDs, m.ProducerID):
		case filter.MinDurationMs != nil && (m.StartTime == noTimestamp || now-m.StartTime <= *filter.MinDurationMs):
		case pattern != nil && !pattern.MatchString(m.TransactionalID):
		default:
			result.Transactions = append(result.Transactions, Listing{TransactionalID: m.TransactionalID, ProducerID: m.ProducerID, State: m.State})
		}
	}
	slices.SortFunc(result.Transactions, func(a, b Listing) int {
		return strings.Compare(a.TransactionalID, b.TransactionalID)
	})
	return result, nil
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
