package faults

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/exactly-eos/exactly/wire"
)

// Kind names what a fired fault did. Proxy kinds are the rule actions;
// process kinds are what a Process did to a broker the load generator
// launched; client kinds are the runner's own client faults.
type Kind string

// Fault kinds.
const (
	// KindDropRequest: the request was swallowed and the connection cut; the
	// broker never saw it.
	KindDropRequest Kind = "drop-request"
	// KindDropResponse: the broker processed the request, its response was
	// swallowed and the connection cut (written but not acknowledged).
	KindDropResponse Kind = "drop-response"
	// KindDelay: a request or a response was held for a duration.
	KindDelay Kind = "delay"
	// KindReset: the client connection was reset (RST) and the upstream one
	// closed.
	KindReset Kind = "reset"
	// KindBlackhole: a broker stopped accepting and forwarding for a while.
	KindBlackhole Kind = "blackhole"
	// KindDegrade: a degrade rule began to slow the network between the
	// clients and a broker (recorded once per rule and broker).
	KindDegrade Kind = "degrade"
	// KindRetransmit: data on a degraded link was held for a
	// retransmission (a lost segment).
	KindRetransmit Kind = "retransmit"
	// KindKill: a broker process was sent SIGKILL.
	KindKill Kind = "kill"
	// KindRestart: a killed broker process was started again.
	KindRestart Kind = "restart"
	// KindPause: a process was sent SIGSTOP.
	KindPause Kind = "pause"
	// KindResume: a paused process was sent SIGCONT.
	KindResume Kind = "resume"
	// KindHookFailed: a --fault-exec hook exited non-zero, could not
	// start, or did not finish within its timeout (Hooks.Run).
	KindHookFailed Kind = "hook-failed"
	// KindNotRecovered: after a fault a broker did not come back in
	// Metadata with full ISRs within the bound (RunHookActions).
	KindNotRecovered Kind = "not-recovered"
	// KindCut: a broker was cut off the network by the partition proxies.
	KindCut Kind = "cut"
	// KindHeal: a cut-off broker was let back onto the network.
	KindHeal Kind = "heal"
	// KindSlow: a broker's links to the other brokers were slowed by
	// the partition proxies (slow-follower).
	KindSlow Kind = "slow"
	// KindRestore: a slowed broker's links were restored.
	KindRestore Kind = "restore"
	// KindZombieProducer: the runner froze a transactional producer and
	// started a new instance with the same transactional.id.
	KindZombieProducer Kind = "zombie-producer"
	// KindConsumerCrash: the runner killed a consume-transform-produce worker
	// mid-transaction and started a replacement.
	KindConsumerCrash Kind = "consumer-crash"
	// KindGroupJoin: a wave of consume workers joined the group
	// (group-churn).
	KindGroupJoin Kind = "group-join"
	// KindGroupLeave: a consume worker ended its open transaction with an
	// abort and left the group (group-churn).
	KindGroupLeave Kind = "group-leave"
)

// NoAPIKey is the APIKey of events that are not about one request
// (process faults, client faults, a scheduled blackhole).
const NoAPIKey int16 = -1

// Event is one fired fault.
type Event struct {
	Time          time.Time
	Broker        string // upstream host:port, or the process's name
	Kind          Kind
	APIKey        int16 // NoAPIKey when the fault is not about a request
	CorrelationID int32
	Detail        string
}

// String renders the event for logs.
func (e Event) String() string {
	api := ""
	if e.APIKey != NoAPIKey {
		api = fmt.Sprintf(" %s correlation %d", wire.APIName(e.APIKey), e.CorrelationID)
	}
	detail := ""
	if e.Detail != "" {
		detail = ": " + e.Detail
	}
	return fmt.Sprintf("%s %s %s%s%s", e.Time.Format("15:04:05.000"), e.Kind, e.Broker, api, detail)
}

// EventLog records fired faults. It is safe for concurrent use: the proxy's
// connection goroutines, process schedules and the runner all append to it.
type EventLog struct {
	// OnEvent, when set before the log is shared, is called after each
	// event is recorded, from the goroutine that fired the fault (for the
	// progress line). It must not block.
	OnEvent func(Event)

	mu      sync.Mutex // guards events, counts and changed
	events  []Event
	counts  map[Kind]int64
	changed chan struct{} // closed and replaced by every Record
}

// NewEventLog returns an empty log; onEvent may be nil.
func NewEventLog(onEvent func(Event)) *EventLog {
	return &EventLog{OnEvent: onEvent, counts: make(map[Kind]int64)}
}

// Record appends an event, counts it and calls OnEvent.
func (l *EventLog) Record(event Event) {
	if event.Time.IsZero() {
		event.Time = time.Now()
	}
	l.mu.Lock()
	if l.counts == nil {
		l.counts = make(map[Kind]int64)
	}
	l.events = append(l.events, event)
	l.counts[event.Kind]++
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
	l.mu.Unlock()
	if l.OnEvent != nil {
		l.OnEvent(event)
	}
}

// Events returns a copy of every event recorded so far, in record order.
func (l *EventLog) Events() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Event(nil), l.events...)
}

// Counts returns how many events of each kind were recorded.
func (l *EventLog) Counts() map[Kind]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[Kind]int64, len(l.counts))
	for kind, n := range l.counts {
		out[kind] = n
	}
	return out
}

// Count returns how many events of one kind were recorded.
func (l *EventLog) Count(kind Kind) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.counts[kind]
}

// Total returns the number of events recorded.
func (l *EventLog) Total() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return int64(len(l.events))
}

// WaitFor blocks until condition holds over the events recorded so far
// (checked now and after every Record) or ctx ends. condition runs with no
// lock held, on a copy.
func (l *EventLog) WaitFor(ctx context.Context, condition func(events []Event) bool) error {
	for {
		l.mu.Lock()
		events := append([]Event(nil), l.events...)
		if l.changed == nil {
			l.changed = make(chan struct{})
		}
		changed := l.changed
		l.mu.Unlock()
		if condition(events) {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("waiting for fault events (have %d): %w", len(events), ctx.Err())
		}
	}
}
