package stages

import (
	"sync"
	"time"
)

// Positions follows how far a consume stage has processed its input: per
// input partition, the offset after the last record a committed database
// transaction covered. The drain waits on it, not only on the committed
// output count, because the output can hold every original record while
// copies sent after them (at-least-once retries) still sit unread in the
// input: a stage stopped then never sees, and never drops, those copies.
// Any goroutine may call Advance and WaitFor.
type Positions struct {
	mu     sync.Mutex
	next   map[int32]int64
	notify chan struct{}
}

// NewPositions returns an empty tracker.
func NewPositions() *Positions {
	return &Positions{next: map[int32]int64{}, notify: make(chan struct{}, 1)}
}

// Advance records that partition was processed up to (not including)
// next; a lower value than already recorded (a worker that had fallen
// behind before a rebalance) changes nothing.
func (p *Positions) Advance(partition int32, next int64) {
	p.mu.Lock()
	if next <= p.next[partition] {
		p.mu.Unlock()
		return
	}
	p.next[partition] = next
	p.mu.Unlock()
	select {
	case p.notify <- struct{}{}:
	default:
	}
}

// Behind returns the partitions whose processed position is below ends
// (indexed by partition) and the records between them.
func (p *Positions) Behind(ends []int64) (partitions int, records int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for partition, end := range ends {
		if next := p.next[int32(partition)]; next < end {
			partitions++
			records += end - next
		}
	}
	return partitions, records
}

// WaitFor returns true once every partition was processed up to its end
// in ends, false if deadline passes first.
func (p *Positions) WaitFor(ends []int64, deadline time.Time) bool {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for {
		if behind, _ := p.Behind(ends); behind == 0 {
			return true
		}
		select {
		case <-p.notify:
		case <-timer.C:
			behind, _ := p.Behind(ends)
			return behind == 0
		}
	}
}
