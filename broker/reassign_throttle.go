package broker

import (
	"slices"
	"sync"
	"time"
)

// Throttling a reassignment's copy: follower.replication.throttled.rate
// (Kafka's name; there a dynamic broker config the reassignment tool sets
// together with the topics' throttled-replica lists) bounds the bytes per
// second this broker fetches for the partitions it is being added to by a
// reassignment (its id in the role's AddingReplicas). Replicas already in
// a partition's replica set are never throttled, so the in-sync replicas
// keep up with producers while a move copies in the background. The
// default (Long.MAX_VALUE) is no limit. It is a static setting here.

// unthrottled is the rate at or above which no throttle applies.
const unthrottled = 1 << 62

// byteThrottle is a token bucket that may go into debt: bytes already
// received are spent (spend) and, while the balance is negative, throttled
// fetches wait (wait). A burst of one second's worth is allowed. Shared by
// the broker's fetchers: mu guards the balance.
type byteThrottle struct {
	rate float64 // bytes per second

	mu      sync.Mutex
	balance float64
	last    time.Time
}

func newByteThrottle(rate int64) *byteThrottle {
	if rate <= 0 || rate >= unthrottled {
		return nil
	}
	return &byteThrottle{rate: float64(rate), balance: float64(rate), last: time.Now()}
}

// refillLocked adds the tokens earned since the last call (caller holds mu).
func (t *byteThrottle) refillLocked(now time.Time) {
	t.balance = min(t.rate, t.balance+now.Sub(t.last).Seconds()*t.rate)
	t.last = now
}

// wait returns how long throttled fetching must pause (0: go on).
func (t *byteThrottle) wait() time.Duration {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.refillLocked(time.Now())
	if t.balance >= 0 {
		return 0
	}
	return time.Duration(-t.balance / t.rate * float64(time.Second))
}

// spend takes n received bytes from the balance.
func (t *byteThrottle) spend(n int) {
	if t == nil || n <= 0 {
		return
	}
	t.mu.Lock()
	t.refillLocked(time.Now())
	t.balance -= float64(n)
	t.mu.Unlock()
}

// throttledCopy reports whether this broker's fetch of p is a
// reassignment's copy (this broker is one of its adding replicas).
func (b *Broker) throttledCopy(p *topicPartition) bool {
	roles := b.topicRoles(p.topic.name)
	index := int(p.Index())
	return index < len(roles) && slices.Contains(roles[index].AddingReplicas, b.nodeID)
}
