package stages

import (
	"context"
	"crypto/tls"
	"errors"
	"maps"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/verify"
)

// The share-group stage: consumers of one share group (KIP-932). Each
// polls, notes every record it got in the run's verify.ShareLog (record,
// partition, offset, delivery count, consumer), acknowledges each record
// explicitly — accept, or release for a record whose sequence falls on
// ReleaseEvery and that comes for the first time — flushes the
// acknowledgements and notes whether the broker took them. Under
// consumer-crash a consumer is killed between its poll and its
// acknowledgements: its connections are cut and nothing more is sent (the
// broker gives its records to others once its session or their locks
// end); under group-churn one leaves the group the same way, but by the
// client's own close (which hands back what it held).

// ShareSpec is one share consumer's settings.
type ShareSpec struct {
	// Options connect the client (bootstrap brokers, SASL, fault-time
	// retries); the consumer dials through its own dialer, with TLS for a
	// host when TLS returns a configuration.
	Options []kgo.Opt
	TLS     func(host string) *tls.Config
	// ClientID is also the consumer's name in the share log.
	ClientID     string
	Group, Input string
	// ReleaseEvery: a record whose sequence+1 is a multiple of it is
	// released on its first delivery (0: none).
	ReleaseEvery uint64
}

// ShareConsumer is one consumer of the share group.
type ShareConsumer struct {
	spec      ShareSpec
	client    *kgo.Client
	dialer    *severableDialer
	log       *verify.ShareLog
	metrics   Metrics
	committed *Counter
	// crash and leave ask the consumer to die or leave at its next poll
	// with records (or after ender's patience without any).
	crash, leave atomic.Bool
	asked        atomic.Int64 // Unix nanoseconds of the request
	done         chan struct{}
	// held is how many records the consumer held when it crashed or
	// left.
	held atomic.Int64

	ackMu     sync.Mutex
	ackFailed map[int32]error
}

// shareEndPatience is how long a consumer asked to crash or leave waits
// for a poll with records before it goes with none.
const shareEndPatience = 2 * time.Second

// NewShareConsumer returns a consumer of spec's share group that notes
// what it sees in log and counts in committed the records whose first
// acceptance the broker took.
func NewShareConsumer(spec ShareSpec, log *verify.ShareLog, metrics Metrics, committed *Counter) (*ShareConsumer, error) {
	c := &ShareConsumer{spec: spec, dialer: &severableDialer{tls: spec.TLS}, log: log, metrics: metrics, committed: committed,
		done: make(chan struct{}), ackFailed: make(map[int32]error)}
	options := append(append([]kgo.Opt{}, spec.Options...),
		kgo.ClientID(spec.ClientID), kgo.Dialer(c.dialer.dial), kgo.WithLogger(metrics.Logger()),
		kgo.ShareGroup(spec.Group), kgo.ConsumeTopics(spec.Input),
		kgo.ShareAckCallback(func(_ *kgo.Client, results kgo.ShareAckResults) {
			c.ackMu.Lock()
			defer c.ackMu.Unlock()
			for _, result := range results {
				if result.Err != nil {
					c.ackFailed[result.Partition] = result.Err
				}
			}
		}))
	client, err := kgo.NewClient(options...)
	if err != nil {
		return nil, err
	}
	c.client = client
	return c, nil
}

// Name is the consumer's name in the share log.
func (c *ShareConsumer) Name() string { return c.spec.ClientID }

// Crash asks the consumer to die at its next poll, before acknowledging
// anything it got.
func (c *ShareConsumer) Crash() { c.asked.Store(time.Now().UnixNano()); c.crash.Store(true) }

// Leave asks the consumer to leave the group at its next poll, holding
// what it got (its client's close hands it back).
func (c *ShareConsumer) Leave() { c.asked.Store(time.Now().UnixNano()); c.leave.Store(true) }

// Done is closed once Work returned.
func (c *ShareConsumer) Done() <-chan struct{} { return c.done }

// Held is how many records the consumer held, unacknowledged, when it
// crashed or left.
func (c *ShareConsumer) Held() int64 { return c.held.Load() }

// Work polls until ctx ends (then closes the client after its last
// acknowledgements) or the consumer is asked to crash or leave.
func (c *ShareConsumer) Work(ctx context.Context) error {
	defer close(c.done)
	for {
		if ctx.Err() != nil {
			c.client.Close()
			return nil
		}
		pollCtx, cancel := context.WithTimeout(ctx, 250*time.Millisecond)
		fetches := c.client.PollRecords(pollCtx, 1000)
		cancel()
		fetches.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && !errors.Is(err, kgo.ErrClientClosed) {
				c.metrics.RecordError(err)
			}
		})
		records := fetches.Records()
		now := time.Now()
		handles := make([]verify.ShareHandle, len(records))
		headers := make([]verify.Header, len(records))
		ours := make([]bool, len(records))
		for i, record := range records {
			handles[i], headers[i], ours[i] = c.log.Delivered(c.spec.ClientID, record.Partition, record.Offset, record.Value,
				record.DeliveryCount(), now)
		}
		ending := len(records) > 0 || time.Since(time.Unix(0, c.asked.Load())) > shareEndPatience
		switch {
		case c.crash.Load() && ending:
			c.die(now, len(records))
			return nil
		case c.leave.Load() && ending:
			c.depart(now, len(records))
			return nil
		case len(records) == 0:
			continue
		}
		actions := make([]verify.ShareAction, len(records))
		for i, record := range records {
			actions[i] = verify.ShareAccepted
			if ours[i] && record.DeliveryCount() == 1 && c.spec.ReleaseEvery > 0 && (headers[i].Sequence+1)%c.spec.ReleaseEvery == 0 {
				actions[i] = verify.ShareReleased
				record.Ack(kgo.AckRelease)
				continue
			}
			record.Ack(kgo.AckAccept)
		}
		c.ackMu.Lock()
		clear(c.ackFailed)
		c.ackMu.Unlock()
		flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
		flushErr := c.client.FlushAcks(flushCtx)
		cancel()
		if flushErr != nil {
			c.metrics.RecordError(flushErr)
		}
		c.ackMu.Lock()
		failed := maps.Clone(c.ackFailed)
		c.ackMu.Unlock()
		acked := time.Now()
		for i, record := range records {
			if !ours[i] {
				continue
			}
			_, refused := failed[record.Partition]
			if c.log.Acknowledged(handles[i], actions[i], flushErr != nil || refused) {
				c.committed.Add(1)
				c.metrics.RecordEndToEnd(time.Unix(0, headers[i].SendTime), acked)
			}
		}
	}
}

// die cuts the consumer's connections before it acknowledges anything
// of its last poll and abandons its client: to the broker, a process that
// died.
func (c *ShareConsumer) die(now time.Time, held int) {
	c.held.Store(int64(held))
	c.dialer.sever()
	c.log.Departed(c.spec.ClientID, true, now)
	go func() {
		// Nothing reaches the broker any more; the close only frees the
		// client, bounded.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = c.client.LeaveGroupContext(ctx)
		c.client.Close()
	}()
}

// depart leaves the group holding the last poll: the client's close hands
// the records back (releases them) before its leave.
func (c *ShareConsumer) depart(now time.Time, held int) {
	c.held.Store(int64(held))
	c.log.Departed(c.spec.ClientID, false, now)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.client.LeaveGroupContext(ctx); err != nil {
		c.metrics.RecordError(err)
	}
	c.client.Close()
}

// severableDialer dials the consumer's connections and, once severed,
// closes them all and refuses new ones.
type severableDialer struct {
	tls     func(host string) *tls.Config
	mu      sync.Mutex
	severed bool
	conns   []net.Conn
}

var errSevered = errors.New("share consumer crashed: its connections are cut")

func (d *severableDialer) dial(ctx context.Context, network, host string) (net.Conn, error) {
	d.mu.Lock()
	severed := d.severed
	d.mu.Unlock()
	if severed {
		return nil, errSevered
	}
	var conn net.Conn
	var err error
	dialer := &net.Dialer{Timeout: 10 * time.Second}
	if d.tls != nil && d.tls(host) != nil {
		conn, err = (&tls.Dialer{NetDialer: dialer, Config: d.tls(host)}).DialContext(ctx, network, host)
	} else {
		conn, err = dialer.DialContext(ctx, network, host)
	}
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.severed {
		conn.Close()
		return nil, errSevered
	}
	d.conns = append(d.conns, conn)
	return conn, nil
}

func (d *severableDialer) sever() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.severed = true
	for _, conn := range d.conns {
		conn.Close()
	}
	d.conns = nil
}
