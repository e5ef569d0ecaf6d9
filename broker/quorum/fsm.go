package quorum

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// fsm is the replicated state machine: raft.FSM over the metadata Image.
//
// Goroutines: hashicorp/raft calls Apply, Restore and Snapshot from its one
// FSM goroutine, never concurrently; the FSMSnapshot's Persist runs on
// another goroutine, which is safe because it only reads an immutable
// Image. The current image is an atomic pointer: any goroutine may Load it.
// Only the FSM goroutine stores it (publish), and it closes the previous
// image's Changed channel right after the store.
type fsm struct {
	image  atomic.Pointer[Image]
	logger *slog.Logger
}

// applyResult is what Apply returns for one command (the ApplyFuture's
// Response). err wraps a sentinel when the command was rejected, and then
// the state did not change.
type applyResult struct {
	err       error
	index     uint64 // log index of the command
	changed   bool   // the command changed the state: images from index on hold it
	epoch     int64  // register_broker: the new broker epoch
	pidStart  int64  // allocate_producer_ids: the block's first id
	topic     *Topic // create_topic, create_partitions
	partition *Partition
}

func newFSM(logger *slog.Logger) *fsm {
	f := &fsm{logger: logger}
	f.image.Store(emptyImage())
	return f
}

// current returns the published image.
func (f *fsm) current() *Image { return f.image.Load() }

// publish makes img the current image and wakes the readers of the previous
// one. FSM goroutine only.
func (f *fsm) publish(img *Image) {
	prev := f.image.Swap(img)
	close(prev.changed)
}

// Apply implements raft.FSM. A malformed or rejected command changes
// nothing and returns its error in the applyResult; Apply never panics
// (a panic in the command logic would be deterministic, so every node would
// hit it: it is turned into a rejected command instead).
func (f *fsm) Apply(entry *raft.Log) (result any) {
	if entry.Type != raft.LogCommand {
		return applyResult{index: entry.Index}
	}
	defer func() {
		if p := recover(); p != nil {
			f.logger.Error("quorum: command panicked; rejected", "index", entry.Index, "panic", p)
			result = applyResult{index: entry.Index, err: fmt.Errorf("%w: panic: %v", ErrMalformedCommand, p)}
		}
	}()
	cmd, err := decodeCommand(entry.Data)
	if err != nil {
		f.logger.Warn("quorum: malformed command ignored", "index", entry.Index, "err", err)
		return applyResult{index: entry.Index, err: err}
	}
	next, res := applyCommand(f.current(), entry.Index, cmd)
	res.index = entry.Index
	if next != nil {
		res.changed = true
		f.publish(next)
	}
	return res
}

// applyCommand is the state machine's transition function: pure and
// deterministic. It returns the next image (nil if the command was rejected
// or changed nothing) and the result.
func applyCommand(cur *Image, index uint64, cmd any) (*Image, applyResult) {
	next := cur.next(index)
	var res applyResult
	var changed bool
	switch c := cmd.(type) {
	case registerBrokerCmd:
		changed, res = applyRegister(next, index, c)
	case fenceBrokerCmd:
		changed, res.err = applyFence(next, c)
	case unfenceBrokerCmd:
		changed, res.err = applyUnfence(next, c)
	case allocatePIDsCmd:
		changed, res = applyAllocatePIDs(next, c)
	case createTopicCmd:
		changed, res = applyCreateTopic(next, c)
	case deleteTopicCmd:
		changed, res.err = applyDeleteTopic(next, c)
	case createPartitionsCmd:
		changed, res = applyCreatePartitions(next, c)
	case alterPartitionCmd:
		changed, res = applyAlterPartition(next, c)
	case setTopicConfigsCmd:
		changed, res = applySetTopicConfigs(next, c)
	case setGroupConfigsCmd:
		changed, res.err = applySetGroupConfigs(next, c)
	case alterReassignmentCmd:
		changed, res = applyAlterReassignment(next, c)
	case electLeaderCmd:
		changed, res = applyElectLeader(next, c)
	default:
		res.err = fmt.Errorf("%w: no transition for %T", ErrMalformedCommand, cmd)
	}
	if res.err != nil || !changed {
		return nil, res
	}
	return next, res
}

func applyRegister(next *Image, index uint64, c registerBrokerCmd) (bool, applyResult) {
	if c.ID < 0 || c.Host == "" || c.Port <= 0 || c.Port > 65535 {
		return false, applyResult{err: fmt.Errorf("%w: broker registration id %d host %q port %d", ErrInvalidRequest, c.ID, c.Host, c.Port)}
	}
	for _, e := range c.Listeners {
		if e.Name == "" || e.Host == "" || e.Port <= 0 || e.Port > 65535 {
			return false, applyResult{err: fmt.Errorf("%w: broker %d listener %q host %q port %d", ErrInvalidRequest, c.ID, e.Name, e.Host, e.Port)}
		}
	}
	next.brokers[c.ID] = Broker{ID: c.ID, Host: c.Host, Port: c.Port, Rack: c.Rack, Listeners: slices.Clone(c.Listeners), Epoch: int64(index)}
	electLeaderless(next, c.ID)
	return true, applyResult{epoch: int64(index)}
}

// applyFence fences a broker: it leaves every ISR that has another member,
// and each partition it led elects the first replica in assignment order
// that is in the ISR and unfenced, or -1 (unclean election is off).
func applyFence(next *Image, c fenceBrokerCmd) (bool, error) {
	b, ok := next.brokers[c.ID]
	if !ok {
		return false, fmt.Errorf("%w: fence broker %d", ErrUnknownBroker, c.ID)
	}
	if b.Epoch != c.Epoch {
		return false, fmt.Errorf("%w: fence broker %d epoch %d, current %d", ErrStaleBrokerEpoch, c.ID, c.Epoch, b.Epoch)
	}
	if b.Fenced {
		return false, nil
	}
	b.Fenced = true
	next.brokers[c.ID] = b
	forEachPartition(next, func(p Partition) (Partition, bool) { return fencePartition(next, p, c.ID) })
	return true, nil
}

// fencePartition returns p after broker id (already marked fenced in img)
// was fenced, and whether it changed.
func fencePartition(img *Image, p Partition, id int32) (Partition, bool) {
	inISR := slices.Contains(p.ISR, id)
	if !inISR && p.Leader != id {
		return p, false
	}
	changed := false
	if inISR && len(p.ISR) > 1 {
		p.ISR = slices.DeleteFunc(slices.Clone(p.ISR), func(r int32) bool { return r == id })
		changed = true
	}
	if p.Leader == id {
		p.Leader = chooseLeader(img, p)
		p.LeaderEpoch++
		changed = true
	}
	if changed {
		p.PartitionEpoch++
	}
	return p, changed
}

// chooseLeader returns the first replica in assignment order that is in
// the ISR and not fenced, or -1.
func chooseLeader(img *Image, p Partition) int32 {
	for _, r := range p.Replicas {
		if b, ok := img.brokers[r]; ok && !b.Fenced && slices.Contains(p.ISR, r) {
			return r
		}
	}
	return -1
}

func applyUnfence(next *Image, c unfenceBrokerCmd) (bool, error) {
	b, ok := next.brokers[c.ID]
	if !ok {
		return false, fmt.Errorf("%w: unfence broker %d", ErrUnknownBroker, c.ID)
	}
	if b.Epoch != c.Epoch {
		return false, fmt.Errorf("%w: unfence broker %d epoch %d, current %d", ErrStaleBrokerEpoch, c.ID, c.Epoch, b.Epoch)
	}
	if !b.Fenced {
		return false, nil
	}
	b.Fenced = false
	next.brokers[c.ID] = b
	electLeaderless(next, c.ID)
	return true, nil
}

// electLeaderless makes broker id (unfenced) the leader of every leaderless
// partition whose ISR holds it.
func electLeaderless(next *Image, id int32) {
	forEachPartition(next, func(p Partition) (Partition, bool) {
		if p.Leader != -1 || !slices.Contains(p.ISR, id) {
			return p, false
		}
		p.Leader = id
		p.LeaderEpoch++
		p.PartitionEpoch++
		return p, true
	})
}

// forEachPartition calls change on every partition of an image under
// construction; a partition for which it returns true is replaced by the
// returned value (its topic copied once). change must not modify the
// slices of the partition it gets; it may replace them.
func forEachPartition(next *Image, change func(Partition) (Partition, bool)) {
	for name, t := range next.topics {
		var copied *Topic
		for i, p := range t.Partitions {
			np, changed := change(p)
			if !changed {
				continue
			}
			if copied == nil {
				copied = next.mutableTopic(name)
			}
			copied.Partitions[i] = np
		}
	}
}

func applyCreateTopic(next *Image, c createTopicCmd) (bool, applyResult) {
	if err := validateTopicName(c.Name); err != nil {
		return false, applyResult{err: err}
	}
	if _, ok := next.topics[c.Name]; ok {
		return false, applyResult{err: fmt.Errorf("%w: %q", ErrTopicAlreadyExists, c.Name)}
	}
	if c.ID == ([16]byte{}) {
		return false, applyResult{err: fmt.Errorf("%w: topic %q with the zero topic id", ErrInvalidRequest, c.Name)}
	}
	if c.Partitions < 1 || c.Partitions > maxPartitions {
		return false, applyResult{err: fmt.Errorf("%w: topic %q with %d partitions (1..%d)", ErrInvalidPartitions, c.Name, c.Partitions, maxPartitions)}
	}
	live := next.liveBrokers()
	if err := checkReplicationFactor(c.ReplicationFactor, len(live)); err != nil {
		return false, applyResult{err: fmt.Errorf("topic %q: %w", c.Name, err)}
	}
	t := &Topic{Name: c.Name, ID: c.ID, Configs: c.Configs}
	t.Partitions = assign(next, t, 0, c.Partitions, c.ReplicationFactor, live)
	next.topics[c.Name] = t
	out := t.clone()
	return true, applyResult{topic: &out}
}

// maxPartitions bounds a topic's partition count (a command must not make
// every node allocate without bound).
const maxPartitions = 100_000

func checkReplicationFactor(rf int32, live int) error {
	if rf < 1 {
		return fmt.Errorf("%w: replication factor %d must be at least 1", ErrInvalidReplicationFactor, rf)
	}
	if int(rf) > live {
		return fmt.Errorf("%w: replication factor %d larger than the %d available (registered, unfenced) brokers", ErrInvalidReplicationFactor, rf, live)
	}
	return nil
}

// assign returns partitions from..to-1 of t, with replicas spread round
// robin over live (ascending ids): partition p's replica j is
// live[(start+p+j) % n] with start = cursor % n, so leaders rotate over the
// brokers and successive topics start on different brokers (the cursor
// advances by one per call). Every new partition's ISR is its assignment
// and its leader the first replica, epochs 0.
func assign(next *Image, t *Topic, from, to, rf int32, live []int32) []Partition {
	n := int64(len(live))
	start := next.cursor % n
	next.cursor++
	parts := slices.Clone(t.Partitions)
	for p := from; p < to; p++ {
		replicas := make([]int32, rf)
		for j := range replicas {
			replicas[j] = live[(start+int64(p)+int64(j))%n]
		}
		parts = append(parts, Partition{
			Topic: t.Name, TopicID: t.ID, Partition: p,
			Replicas: replicas, ISR: slices.Clone(replicas), Leader: replicas[0],
		})
	}
	return parts
}

// applySetTopicConfigs replaces a topic's configs; the same configs again
// change nothing.
func applySetTopicConfigs(next *Image, c setTopicConfigsCmd) (bool, applyResult) {
	cur, ok := next.topics[c.Name]
	if !ok {
		return false, applyResult{err: fmt.Errorf("%w: set configs of %q", ErrUnknownTopicOrPartition, c.Name)}
	}
	if maps.Equal(cur.Configs, c.Configs) {
		out := cur.clone()
		return false, applyResult{topic: &out}
	}
	t := cur.clone()
	t.Configs = maps.Clone(c.Configs)
	next.topics[c.Name] = &t
	out := t.clone()
	return true, applyResult{topic: &out}
}

// applySetGroupConfigs replaces a group's configs (none: removes them);
// the same configs again change nothing. The group need not exist: its
// configs are metadata of the cluster, not of the group coordinator.
func applySetGroupConfigs(next *Image, c setGroupConfigsCmd) (bool, error) {
	if c.Group == "" {
		return false, fmt.Errorf("%w: group configs of the empty group id", ErrInvalidRequest)
	}
	cur := next.groupConfigs[c.Group]
	if maps.Equal(cur, c.Configs) {
		return false, nil
	}
	if len(c.Configs) == 0 {
		delete(next.groupConfigs, c.Group)
	} else {
		next.groupConfigs[c.Group] = maps.Clone(c.Configs)
	}
	return true, nil
}

func applyDeleteTopic(next *Image, c deleteTopicCmd) (bool, error) {
	if _, ok := next.topics[c.Name]; !ok {
		return false, fmt.Errorf("%w: delete topic %q", ErrUnknownTopicOrPartition, c.Name)
	}
	delete(next.topics, c.Name)
	return true, nil
}

func applyCreatePartitions(next *Image, c createPartitionsCmd) (bool, applyResult) {
	cur, ok := next.topics[c.Name]
	if !ok {
		return false, applyResult{err: fmt.Errorf("%w: create partitions of %q", ErrUnknownTopicOrPartition, c.Name)}
	}
	have := int32(len(cur.Partitions))
	if c.Count <= have || c.Count > maxPartitions {
		return false, applyResult{err: fmt.Errorf("%w: topic %q has %d partitions, asked for %d", ErrInvalidPartitions, c.Name, have, c.Count)}
	}
	rf := int32(len(cur.Partitions[0].TargetReplicas()))
	live := next.liveBrokers()
	if err := checkReplicationFactor(rf, len(live)); err != nil {
		return false, applyResult{err: fmt.Errorf("topic %q: %w", c.Name, err)}
	}
	t := next.mutableTopic(c.Name)
	t.Partitions = assign(next, t, have, c.Count, rf, live)
	out := t.clone()
	return true, applyResult{topic: &out}
}

// applyAlterPartition checks a leader's ISR change as Kafka's controller
// does: both epochs must be current, and the new ISR must hold the leader
// and only unfenced replicas of the assignment. Success bumps the partition
// epoch; the ISR is stored in assignment order.
func applyAlterPartition(next *Image, c alterPartitionCmd) (bool, applyResult) {
	t, ok := next.topics[c.Topic]
	if !ok || c.Partition < 0 || int(c.Partition) >= len(t.Partitions) {
		return false, applyResult{err: fmt.Errorf("%w: alter partition %s-%d", ErrUnknownTopicOrPartition, c.Topic, c.Partition)}
	}
	p := t.Partitions[c.Partition]
	if c.LeaderEpoch != p.LeaderEpoch {
		return false, applyResult{err: fmt.Errorf("%w: alter partition %s-%d with leader epoch %d, current %d", ErrFencedLeaderEpoch, c.Topic, c.Partition, c.LeaderEpoch, p.LeaderEpoch)}
	}
	if c.PartitionEpoch != p.PartitionEpoch {
		return false, applyResult{err: fmt.Errorf("%w: alter partition %s-%d with partition epoch %d, current %d", ErrInvalidUpdateVersion, c.Topic, c.Partition, c.PartitionEpoch, p.PartitionEpoch)}
	}
	if p.Leader < 0 || !slices.Contains(c.ISR, p.Leader) {
		return false, applyResult{err: fmt.Errorf("%w: alter partition %s-%d: ISR %v lacks the leader %d", ErrIneligibleReplica, c.Topic, c.Partition, c.ISR, p.Leader)}
	}
	isr := make([]int32, 0, len(c.ISR))
	for _, r := range p.Replicas {
		if slices.Contains(c.ISR, r) {
			isr = append(isr, r)
		}
	}
	if len(isr) != len(c.ISR) {
		return false, applyResult{err: fmt.Errorf("%w: alter partition %s-%d: ISR %v is not a set of the replicas %v", ErrIneligibleReplica, c.Topic, c.Partition, c.ISR, p.Replicas)}
	}
	for _, r := range isr {
		if b, ok := next.brokers[r]; !ok || b.Fenced {
			return false, applyResult{err: fmt.Errorf("%w: alter partition %s-%d: replica %d is fenced", ErrIneligibleReplica, c.Topic, c.Partition, r)}
		}
	}
	prev := p
	p = p.clone()
	p.ISR = isr
	p.PartitionEpoch++
	// The ISR now holding every target replica completes a reassignment.
	p = completeReassignment(next, p, prev)
	return true, storePartition(next, p)
}

// validateTopicName applies Kafka's rules: 1..249 characters of
// [a-zA-Z0-9._-], not "." or "..".
func validateTopicName(name string) error {
	if name == "" || name == "." || name == ".." || len(name) > 249 {
		return fmt.Errorf("%w: %q", ErrInvalidTopic, name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("%w: %q has character %q", ErrInvalidTopic, name, r)
		}
	}
	return nil
}
