package quorum

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// controller is the controller logic of a node, active only while the node
// is the raft leader (the "active controller"): broker liveness and every
// request that writes a command.
//
// Goroutines: run (one per node) owns the transitions of active and the
// fencing decisions; the RPC server's goroutines and local callers run
// handle concurrently, which only reads active and records heartbeats in
// lastSeen under mu. Commands are proposed with raft.Apply from any of
// them; raft serialises them in the log.
type controller struct {
	n *Node
	// active is true from the moment this node is raft leader and has
	// applied every entry of earlier terms (a barrier) until it loses the
	// leadership. handle refuses requests with ErrNotController while it is
	// false, so no request is judged on a stale image.
	active atomic.Bool

	mu sync.Mutex // guards lastSeen
	// lastSeen is the last heartbeat (or registration) of each broker, in
	// memory only: a new active controller resets every broker to "now", so
	// it does not fence everybody at once after a failover.
	lastSeen map[int32]time.Time
}

func newController(n *Node) *controller {
	return &controller{n: n, lastSeen: map[int32]time.Time{}}
}

// applyTimeout bounds raft's enqueueing of a command.
const applyTimeout = 5 * time.Second

// run watches the raft state and, while leader, fences brokers whose
// session expired. It checks every tick (a quarter of HeartbeatInterval,
// at most SessionTimeout/10) and at once on a leadership signal.
func (c *controller) run(ctx context.Context) {
	defer c.n.wg.Done()
	tick := min(c.n.cfg.HeartbeatInterval/4, c.n.cfg.SessionTimeout/10)
	tick = max(tick, 5*time.Millisecond)
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	lastRebalance := time.Now()
	for {
		select {
		case <-ctx.Done():
			c.active.Store(false)
			return
		case <-c.n.raft.LeaderCh():
		case <-ticker.C:
		}
		leader := c.n.raft.State() == raft.Leader
		switch {
		case leader && !c.active.Load():
			c.activate()
		case !leader && c.active.Load():
			c.active.Store(false)
			c.n.logger.Info("quorum: no longer the active controller")
		}
		if c.active.Load() {
			c.fenceExpired(ctx)
			if rb := c.n.cfg.LeaderRebalance; rb.Enabled && rb.Interval > 0 && time.Since(lastRebalance) >= rb.Interval {
				lastRebalance = time.Now()
				c.rebalanceLeaders(ctx, rb.Percent)
			}
		}
	}
}

// activate makes this leader the active controller once its FSM holds every
// committed entry, and starts every broker's session anew.
func (c *controller) activate() {
	if err := c.n.raft.Barrier(applyTimeout).Error(); err != nil {
		c.n.logger.Debug("quorum: barrier as new leader", "err", err)
		return
	}
	now := time.Now()
	c.mu.Lock()
	clear(c.lastSeen)
	for _, b := range c.n.Image().Brokers() {
		c.lastSeen[b.ID] = now
	}
	c.mu.Unlock()
	c.active.Store(true)
	c.n.logger.Info("quorum: active controller", "index", c.n.Image().Index())
}

// seen records a heartbeat of broker id.
func (c *controller) seen(id int32) {
	c.mu.Lock()
	c.lastSeen[id] = time.Now()
	c.mu.Unlock()
}

// fenceExpired fences every unfenced broker silent for SessionTimeout.
//
// An in-process quorum (Config.inProcess, a cluster of one) fences
// nobody: its one broker shares the process with the controller, so a
// silent broker means a stopped process (SIGSTOP, a long pause), which
// stopped the controller too. Fencing it when the process runs again
// would only take the leadership of every partition from the one broker
// that can hold it.
func (c *controller) fenceExpired(ctx context.Context) {
	if c.n.cfg.inProcess() {
		return
	}
	now := time.Now()
	for _, b := range c.n.Image().Brokers() {
		if b.Fenced {
			continue
		}
		c.mu.Lock()
		last, ok := c.lastSeen[b.ID]
		if !ok {
			c.lastSeen[b.ID] = now // registered through an earlier controller
		}
		c.mu.Unlock()
		if !ok || now.Sub(last) < c.n.cfg.SessionTimeout {
			continue
		}
		res, err := c.apply(fenceBrokerCmd{ID: b.ID, Epoch: b.Epoch})
		if err == nil {
			err = res.err
		}
		if err != nil {
			if ctx.Err() == nil {
				c.n.logger.Warn("quorum: fence broker", "broker", b.ID, "err", err)
			}
			return
		}
		c.n.logger.Info("quorum: fenced broker", "broker", b.ID, "silent", now.Sub(last))
	}
}

// rebalanceLeaders elects the preferred leader of every partition
// Image.Imbalanced names (auto.leader.rebalance.enable).
func (c *controller) rebalanceLeaders(ctx context.Context, percent int) {
	moved := 0
	for _, p := range c.n.Image().Imbalanced(percent) {
		if ctx.Err() != nil || !c.active.Load() {
			return
		}
		res, err := c.apply(electLeaderCmd{Topic: p.Topic, Partition: p.Partition})
		if err == nil {
			err = res.err
		}
		switch {
		case err == nil:
			moved++
		case errors.Is(err, ErrElectionNotNeeded), errors.Is(err, ErrPreferredLeaderNotAvailable):
		default:
			c.n.logger.Warn("quorum: preferred leader election", "partition", fmt.Sprintf("%s-%d", p.Topic, p.Partition), "err", err)
			return
		}
	}
	if moved > 0 {
		c.n.logger.Info("quorum: leaders rebalanced to their preferred replicas", "partitions", moved)
	}
}

// apply proposes cmd and returns the state machine's result. The error is
// raft's (wrapping ErrNotController when the leadership is lost, ErrClosed
// when raft shut down); a rejected command is in the result's err.
func (c *controller) apply(cmd any) (applyResult, error) {
	data, err := encodeCommand(cmd)
	if err != nil {
		return applyResult{}, err
	}
	f := c.n.raft.Apply(data, applyTimeout)
	if err := f.Error(); err != nil {
		switch {
		case errors.Is(err, raft.ErrRaftShutdown):
			return applyResult{}, fmt.Errorf("%w: %v", ErrClosed, err)
		case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipLost),
			errors.Is(err, raft.ErrEnqueueTimeout), errors.Is(err, raft.ErrAbortedByRestore):
			return applyResult{}, fmt.Errorf("%w: %v", ErrNotController, err)
		}
		return applyResult{}, fmt.Errorf("quorum: apply: %w", err)
	}
	res, ok := f.Response().(applyResult)
	if !ok {
		return applyResult{}, fmt.Errorf("quorum: apply: unexpected response %T", f.Response())
	}
	return res, nil
}

// handle executes a request on the active controller; it is the RPC
// server's handler and what submit calls when this node is the leader.
func (c *controller) handle(ctx context.Context, req rpcRequest) rpcResponse {
	res, err := c.execute(ctx, req)
	if err == nil {
		err = res.err
	}
	if err != nil {
		return rpcResponse{Error: err.Error(), Code: sentinelName(err)}
	}
	resp := rpcResponse{Epoch: res.epoch, Topic: res.topic, Partition: res.partition}
	if res.changed {
		resp.Index = res.index
	}
	resp.PIDStart = res.pidStart
	return resp
}

func (c *controller) execute(ctx context.Context, req rpcRequest) (applyResult, error) {
	if !c.active.Load() {
		return applyResult{}, ErrNotController
	}
	if ctx.Err() != nil {
		return applyResult{}, ctx.Err()
	}
	missing := fmt.Errorf("%w: %s request without its body", ErrInvalidRequest, req.Op)
	switch req.Op {
	case opRegister:
		if req.Register == nil {
			return applyResult{}, missing
		}
		r := req.Register
		res, err := c.apply(registerBrokerCmd{ID: r.ID, Host: r.Host, Port: r.Port, Rack: r.Rack, Listeners: r.Listeners})
		if err == nil && res.err == nil {
			c.seen(r.ID)
		}
		return res, err
	case opHeartbeat:
		if req.Heartbeat == nil {
			return applyResult{}, missing
		}
		return c.heartbeat(*req.Heartbeat)
	case opAllocateProducerIDs:
		if req.ProducerIDs == nil {
			return applyResult{}, missing
		}
		return c.apply(*req.ProducerIDs)
	case opCreateTopic:
		if req.CreateTopic == nil {
			return applyResult{}, missing
		}
		r := req.CreateTopic
		cmd := createTopicCmd{Name: r.Name, Partitions: r.Partitions, ReplicationFactor: r.ReplicationFactor, Configs: r.Configs}
		_, _ = rand.Read(cmd.ID[:])
		return c.apply(cmd)
	case opDeleteTopic:
		if req.DeleteTopic == nil {
			return applyResult{}, missing
		}
		return c.apply(*req.DeleteTopic)
	case opCreatePartitions:
		if req.CreatePartitions == nil {
			return applyResult{}, missing
		}
		return c.apply(*req.CreatePartitions)
	case opAlterPartition:
		if req.AlterPartition == nil {
			return applyResult{}, missing
		}
		return c.apply(*req.AlterPartition)
	case opSetTopicConfigs:
		if req.SetTopicConfigs == nil {
			return applyResult{}, missing
		}
		return c.apply(*req.SetTopicConfigs)
	case opSetGroupConfigs:
		if req.SetGroupConfigs == nil {
			return applyResult{}, missing
		}
		return c.apply(*req.SetGroupConfigs)
	case opAlterReassignment:
		if req.AlterReassignment == nil {
			return applyResult{}, missing
		}
		return c.apply(*req.AlterReassignment)
	case opElectLeader:
		if req.ElectLeader == nil {
			return applyResult{}, missing
		}
		return c.apply(*req.ElectLeader)
	case opJoin:
		if req.Join == nil {
			return applyResult{}, missing
		}
		return applyResult{}, c.join(*req.Join)
	}
	return applyResult{}, fmt.Errorf("%w: unknown op %q", ErrInvalidRequest, req.Op)
}

// heartbeat records a live broker; a fenced one is unfenced by a command.
func (c *controller) heartbeat(hb heartbeatRequest) (applyResult, error) {
	b, ok := c.n.Image().Broker(hb.ID)
	if !ok {
		return applyResult{}, fmt.Errorf("%w: heartbeat of broker %d", ErrUnknownBroker, hb.ID)
	}
	if b.Epoch != hb.Epoch {
		return applyResult{}, fmt.Errorf("%w: heartbeat of broker %d epoch %d, current %d", ErrStaleBrokerEpoch, hb.ID, hb.Epoch, b.Epoch)
	}
	c.seen(hb.ID)
	if !b.Fenced {
		return applyResult{}, nil
	}
	res, err := c.apply(unfenceBrokerCmd{ID: hb.ID, Epoch: hb.Epoch})
	if err == nil && res.err == nil {
		c.n.logger.Info("quorum: unfenced broker", "broker", hb.ID)
	}
	return res, err
}

// join adds a node as a raft non-voter (a no-op if it is in the
// configuration already).
func (c *controller) join(j joinRequest) error {
	if j.ID < 0 || j.Raft == "" {
		return fmt.Errorf("%w: join of node %d at %q", ErrInvalidRequest, j.ID, j.Raft)
	}
	f := c.n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return fmt.Errorf("%w: configuration: %v", ErrNotController, err)
	}
	for _, s := range f.Configuration().Servers {
		if s.ID == serverID(j.ID) && s.Address == raft.ServerAddress(j.Raft) {
			return nil
		}
	}
	if err := c.n.raft.AddNonvoter(serverID(j.ID), raft.ServerAddress(j.Raft), 0, applyTimeout).Error(); err != nil {
		return fmt.Errorf("%w: add non-voter %d: %v", ErrNotController, j.ID, err)
	}
	c.n.logger.Info("quorum: added non-voter", "node", j.ID, "raft", j.Raft)
	return nil
}
