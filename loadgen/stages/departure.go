package stages

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/verify"
)

// churnPollSlice bounds one poll of a churning worker, so a worker asked
// to leave notices between polls even when no records arrive (franz-go's
// TestTxnEtl polls with 100 ms).
const churnPollSlice = 200 * time.Millisecond

// Departure tells one churning worker when to leave: after afterCommits
// commits (-1: not by count), or once leave is closed (its phase ended).
// The worker's goroutine owns commits; the stage's hooks are safe to call
// from it.
type Departure struct {
	AfterCommits int
	Leave        <-chan struct{}
	commits      int
	// OnCommitted receives each committed poll; OnLeft is told how many
	// records the aborted transaction held (0: the worker left between
	// polls with nothing open) and after how many commits.
	OnCommitted func(fetches kgo.Fetches)
	OnLeft      func(records, commits int)
}

// pollContext bounds a churning worker's poll by churnPollSlice; without
// churn (d nil) the poll waits on ctx alone.
func (d *Departure) pollContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if d == nil {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, churnPollSlice)
}

// requested reports whether the worker's phase ended.
func (d *Departure) requested() bool {
	if d == nil {
		return false
	}
	select {
	case <-d.Leave:
		return true
	default:
		return false
	}
}

// commitNext reports whether the poll about to be processed may commit;
// false means: end it with an abort, then leave.
func (d *Departure) commitNext() bool {
	if d == nil {
		return true
	}
	return !(d.AfterCommits >= 0 && d.commits >= d.AfterCommits) && !d.requested()
}

// committed counts a committed poll and reports it.
func (d *Departure) committed(fetches kgo.Fetches) {
	if d == nil {
		return
	}
	d.commits++
	if d.OnCommitted != nil {
		d.OnCommitted(fetches)
	}
}

// aborted reports a transaction of records ended with an abort to leave.
func (d *Departure) aborted(records int) {
	if d != nil && d.OnLeft != nil {
		d.OnLeft(records, d.commits)
	}
}

// leftIdle reports a worker leaving with no transaction open.
func (d *Departure) leftIdle() { d.aborted(0) }

// IdentityCounter turns the polls a stage's last step committed into the
// stage's progress: the number of distinct load records (producer,
// sequence) among them, added to counter. A record processed twice (churn
// hands a partition over from its committed offset; a broken broker may
// let a copy through) counts once, so the drain waits for every input
// record even when the output holds copies, whatever offsets transaction
// markers take in a chained stage's input. mu guards seen.
type IdentityCounter struct {
	mu      sync.Mutex
	seen    map[[2]uint64]struct{}
	counter Counter
}

func NewIdentityCounter(counter Counter) *IdentityCounter {
	return &IdentityCounter{seen: make(map[[2]uint64]struct{}), counter: counter}
}

// Commit counts the poll's records not counted before.
func (c *IdentityCounter) Commit(fetches kgo.Fetches) {
	c.mu.Lock()
	gained := int64(0)
	fetches.EachRecord(func(record *kgo.Record) {
		header, err := verify.DecodeHeader(record.Value)
		if err != nil {
			return // not a loadgen record
		}
		identity := [2]uint64{uint64(header.Producer), header.Sequence}
		if _, counted := c.seen[identity]; !counted {
			c.seen[identity] = struct{}{}
			gained++
		}
	})
	c.mu.Unlock()
	c.counter.Add(gained)
}
