package group

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Coordinator is a group coordinator: a broker runs one for each
// __consumer_offsets partition it leads (on a cluster of one, all of
// them), owning the groups that partition holds.
//
// Concurrency: the coordinator runs no goroutine of its own. Requests run
// on the callers' goroutines; time moves only when Tick is called (by the
// thin driver, StartTicker, or by a test with a fake clock). mu guards the
// group map, the transaction index and closed; each group has its own
// mutex that serializes everything done to it (group.mu). Tick takes each
// group's mutex in turn and fires what is due, so all state changes happen
// under the owner's lock. Parked JoinGroup and SyncGroup calls are answered
// through the JoinReply/SyncReply callbacks their callers passed.
type Coordinator struct {
	cfg   Config
	store OffsetStore

	// appendOrder numbers store appends coordinator-wide (offsetEntry).
	appendOrder atomic.Int64

	mu     sync.Mutex
	groups map[string]*group
	// txnGroups indexes which groups hold pending transactional offsets of
	// each producer id, so CompleteTxn finds them.
	txnGroups map[int64]map[string]struct{}
	closed    bool
	// closing is closed by Close; the ticker driver stops on it.
	closing chan struct{}
	// refuse is the sentinel calls fail with once closed: ErrNotCoordinator,
	// or what NewRefusingCoordinator was given. Set at creation.
	refuse error

	// tickMu serializes Tick (and Close waits on it for a Tick in
	// progress); lastRetentionCheck is guarded by it.
	tickMu             sync.Mutex
	lastRetentionCheck time.Time
}

// NewCoordinator loads every group and committed offset from store and
// returns the coordinator. It starts no goroutine: timers fire only when
// Tick is called (StartTicker does so every cfg.TickInterval).
func NewCoordinator(cfg Config, store OffsetStore) (*Coordinator, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("group coordinator config: %w", err)
	}
	if store == nil {
		return nil, errors.New("group coordinator: nil offset store")
	}
	c := &Coordinator{
		cfg:       cfg,
		store:     store,
		groups:    make(map[string]*group),
		txnGroups: make(map[int64]map[string]struct{}),
		closing:   make(chan struct{}),
		refuse:    ErrNotCoordinator,
	}
	c.lastRetentionCheck = cfg.Now()
	if err := c.load(context.Background()); err != nil {
		return nil, fmt.Errorf("load __consumer_offsets: %w", err)
	}
	return c, nil
}

// Tick is the coordinator's time step: it fires every timer due at now —
// session timeouts, KIP-394 pending member expiry, the initial rebalance
// delay, rebalance timeouts, and (every offsets.retention.check.interval)
// offset expiry. Joins and syncs completed by a timer are answered through
// their reply callbacks before Tick returns. now should come from the
// same clock as Config.Now. After Close, Tick does nothing.
func (c *Coordinator) Tick(now time.Time) {
	c.tickMu.Lock()
	defer c.tickMu.Unlock()
	if c.isClosed() {
		return
	}
	ctx := context.Background()
	for _, g := range c.snapshotGroups() {
		g.mu.Lock()
		g.tick(ctx, now)
		g.unlock()
	}
	if now.Sub(c.lastRetentionCheck) >= c.cfg.OffsetsRetentionCheckInterval {
		c.lastRetentionCheck = now
		c.expireOffsets(ctx, now)
	}
}

// Close answers every parked JoinGroup and SyncGroup with
// ErrNotCoordinator, makes later calls fail with it, waits for a Tick in
// progress and closes the store.
func (c *Coordinator) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	close(c.closing)
	c.mu.Unlock()
	// A Tick in progress finishes; later ones see closed and return.
	c.tickMu.Lock()
	c.tickMu.Unlock() // an empty critical section: waiting is the point
	// lockGroup re-checks closed after taking a group's lock, so every
	// request that parked did so before this visit to its group.
	for _, g := range c.snapshotGroups() {
		g.mu.Lock()
		g.releaseWaiters(groupError(g.id, ErrNotCoordinator))
		g.mu.Unlock()
	}
	if err := c.store.Close(); err != nil {
		return fmt.Errorf("close offset store: %w", err)
	}
	return nil
}

// NewRefusingCoordinator returns a coordinator that is closed from the
// start and fails every call with an error wrapping sentinel (for a broker
// of a cluster: ErrNotCoordinator for a group whose __consumer_offsets
// partition it does not lead, ErrCoordinatorLoadInProgress while it loads
// one). It has no store and no groups.
func NewRefusingCoordinator(sentinel error) *Coordinator {
	c := &Coordinator{groups: map[string]*group{}, txnGroups: map[int64]map[string]struct{}{},
		closed: true, closing: make(chan struct{}), refuse: sentinel}
	close(c.closing)
	return c
}

// refusal is the sentinel of a call made after Close (ErrNotCoordinator
// unless the coordinator was made by NewRefusingCoordinator).
func (c *Coordinator) refusal() error { return c.refuse }

// Refusing reports whether every call fails: the coordinator is closed,
// or was made by NewRefusingCoordinator.
func (c *Coordinator) Refusing() bool { return c.isClosed() }

func (c *Coordinator) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

func (c *Coordinator) snapshotGroups() []*group {
	c.mu.Lock()
	defer c.mu.Unlock()
	groups := make([]*group, 0, len(c.groups))
	for _, g := range c.groups {
		groups = append(groups, g)
	}
	return groups
}

// lockGroup returns the named group locked, creating it (Empty) if create
// is set. It returns nil when the group does not exist or the coordinator
// is closed (checked again under the group's lock, so that Close, which
// visits every group after setting closed, sees every parked request). A
// Dead group has already left the map, so the loop ends.
func (c *Coordinator) lockGroup(id string, create bool) *group {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil
		}
		g, ok := c.groups[id]
		if !ok {
			if !create {
				c.mu.Unlock()
				return nil
			}
			g = newGroup(c, id, c.cfg.Now())
			c.groups[id] = g
		}
		c.mu.Unlock()
		g.mu.Lock()
		if c.isClosed() {
			g.mu.Unlock()
			return nil
		}
		if g.state != stateDead {
			return g
		}
		g.mu.Unlock()
	}
}

// removeGroup marks g Dead and drops it from the map. Called with g.mu held.
func (c *Coordinator) removeGroup(g *group) {
	g.state = stateDead
	c.mu.Lock()
	if c.groups[g.id] == g {
		delete(c.groups, g.id)
	}
	c.mu.Unlock()
}

// appendRecords appends plain records to partition and waits until they are
// durable. The error wraps the store's.
func (c *Coordinator) appendRecords(ctx context.Context, partition int32, now time.Time, records []StoreRecord) error {
	batch := StoreBatch{ProducerID: -1, ProducerEpoch: -1, Records: records, TimestampMillis: now.UnixMilli()}
	if err := c.store.Append(ctx, partition, batch); err != nil {
		return fmt.Errorf("append to __consumer_offsets-%d: %w", partition, err)
	}
	return nil
}

// newMemberID returns clientID-<uuid v4>, Kafka's member id format.
func newMemberID(clientID string) string {
	var raw [16]byte
	_, _ = rand.Read(raw[:]) // crypto/rand.Read never fails (Go 1.24+)
	raw[6] = raw[6]&0x0f | 0x40
	raw[8] = raw[8]&0x3f | 0x80
	text := hex.EncodeToString(raw[:])
	return clientID + "-" + text[0:8] + "-" + text[8:12] + "-" + text[12:16] + "-" + text[16:20] + "-" + text[20:]
}

type clientInfoKey struct{}

// ClientInfo describes the connection a request came on; DescribeGroups
// reports it per member and member ids start with the client id.
type ClientInfo struct {
	ClientID string
	Host     string
}

// WithClientInfo returns ctx carrying the request's client id and host; the
// broker's handler adapter sets it, and JoinGroup's per-API file reads it
// back (ClientInfoFrom) into JoinRequest.Client.
func WithClientInfo(ctx context.Context, info ClientInfo) context.Context {
	return context.WithValue(ctx, clientInfoKey{}, info)
}

// ClientInfoFrom returns the client info WithClientInfo put in ctx (zero
// if none).
func ClientInfoFrom(ctx context.Context) ClientInfo {
	info, _ := ctx.Value(clientInfoKey{}).(ClientInfo)
	return info
}
