package quorum

import (
	"maps"
	"slices"
	"sort"
)

// Broker is one broker as registered in the quorum. Its fields mirror
// broker.ClusterBroker (plus Epoch), so the glue converts mechanically.
type Broker struct {
	ID   int32
	Host string
	Port int32
	Rack string
	// Listeners are the broker's client listeners by name
	// (BrokerRegistration.Listeners); Host and Port are its inter-broker one.
	Listeners []Endpoint `json:",omitempty"`
	// Epoch is the broker epoch: the raft log index of the broker's latest
	// registration. Heartbeats carry it; a new registration (a restarted
	// broker) makes the older epoch stale.
	Epoch int64
	// Fenced: the broker stopped heartbeating. A fenced broker is no
	// partition's leader and in no ISR that has another member.
	Fenced bool
}

// Partition is the controller's decision about one partition's replica set.
// Its fields mirror broker.PartitionRole, so the glue converts mechanically.
//
// Invariants (checked by the tests after every command):
//   - Replicas is non-empty and has no duplicates; it changes only by a
//     reassignment (AlterPartitionReassignments, reassign.go).
//   - ISR is a non-empty subset of Replicas, in assignment order.
//   - AddingReplicas and RemovingReplicas are disjoint subsets of
//     Replicas, both empty unless a reassignment is in progress; then
//     Replicas is the target followed by the replicas being removed.
//   - Leader >= 0: Leader is in ISR and every ISR member is unfenced.
//   - Leader == -1: ISR holds exactly the one last member, which is fenced.
type Partition struct {
	Topic          string
	TopicID        [16]byte
	Partition      int32
	Replicas       []int32 // assignment order; the preferred leader first
	ISR            []int32 // in-sync replicas (always includes Leader when Leader >= 0)
	Leader         int32   // -1: no leader (every ISR member is fenced, unclean election off)
	LeaderEpoch    int32   // bumped at every leader change
	PartitionEpoch int32   // bumped at every change of ISR or leader (KIP-497)
	// AddingReplicas and RemovingReplicas describe a reassignment in
	// progress (Kafka's PartitionRecord fields of the same names): the
	// target replica set is Replicas minus RemovingReplicas; it is
	// reached once every target replica is in the ISR.
	AddingReplicas   []int32 `json:",omitempty"`
	RemovingReplicas []int32 `json:",omitempty"`
}

// Topic is one topic: its name, 16-byte id, configs and partitions (index i
// holds partition i).
type Topic struct {
	Name       string
	ID         [16]byte
	Configs    map[string]string
	Partitions []Partition
}

// Image is an immutable snapshot of the replicated metadata. A published
// Image is never modified: the state machine builds the next one by copying
// what a command changes (copy-on-write) and publishes it with an atomic
// pointer store, so readers need no lock. Methods return copies; callers may
// modify what they get.
//
// Change notification: Changed returns a channel that is closed when a newer
// Image has been published. The usual loop is
//
//	img := node.Image()
//	for {
//		use(img)
//		select {
//		case <-img.Changed():
//			img = node.Image()
//		case <-ctx.Done():
//			return
//		}
//	}
//
// which misses no change: a change between Image and Changed closes the
// channel of the image already held.
type Image struct {
	// index is the raft log index of the last command that changed the state.
	index uint64
	// brokers and topics are never modified once the image is published; a
	// *Topic and the slices inside it are shared between images and
	// replaced, never written in place.
	brokers map[int32]Broker
	topics  map[string]*Topic
	// groupConfigs are the dynamic configs of groups (Kafka's GROUP config
	// resource) by group id; a group with none has no entry. The inner
	// maps are shared between images and replaced, never written.
	groupConfigs map[string]map[string]string
	// cursor is the rotating start of replica assignment: each CreateTopic
	// or CreatePartitions starts at live broker cursor % n and increments it.
	cursor int64
	// producerIDs is the controller's producer-id allocation
	// (producer_ids.go).
	producerIDs producerIDState
	// changed is closed when the next image is published.
	changed chan struct{}
}

// emptyImage returns the image of a quorum with no brokers and no topics.
func emptyImage() *Image {
	return &Image{
		brokers: map[int32]Broker{},
		topics:  map[string]*Topic{},

		groupConfigs: map[string]map[string]string{},

		changed: make(chan struct{}),
	}
}

// Index returns the raft log index of the last command that changed the
// state (0 for the empty state). Images of the same index are equal.
func (img *Image) Index() uint64 { return img.index }

// Changed returns a channel closed once a newer Image is published.
func (img *Image) Changed() <-chan struct{} { return img.changed }

// Brokers returns every registered broker, by id.
func (img *Image) Brokers() []Broker {
	out := make([]Broker, 0, len(img.brokers))
	for _, b := range img.brokers {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Broker returns the broker with id, if registered.
func (img *Image) Broker(id int32) (Broker, bool) {
	b, ok := img.brokers[id]
	return b, ok
}

// Topics returns every topic, by name.
func (img *Image) Topics() []Topic {
	names := slices.Sorted(maps.Keys(img.topics))
	out := make([]Topic, 0, len(names))
	for _, name := range names {
		out = append(out, img.topics[name].clone())
	}
	return out
}

// Topic returns the topic called name, if it exists.
func (img *Image) Topic(name string) (Topic, bool) {
	t, ok := img.topics[name]
	if !ok {
		return Topic{}, false
	}
	return t.clone(), true
}

// Partition returns one partition, if it exists.
func (img *Image) Partition(topic string, partition int32) (Partition, bool) {
	t, ok := img.topics[topic]
	if !ok || partition < 0 || int(partition) >= len(t.Partitions) {
		return Partition{}, false
	}
	return t.Partitions[partition].clone(), true
}

// GroupConfigs returns the dynamic configs of group id (nil when it has
// none).
func (img *Image) GroupConfigs(id string) map[string]string {
	return maps.Clone(img.groupConfigs[id])
}

// AllGroupConfigs returns the dynamic configs of every group that has
// some, by group id.
func (img *Image) AllGroupConfigs() map[string]map[string]string {
	out := make(map[string]map[string]string, len(img.groupConfigs))
	for id, configs := range img.groupConfigs {
		out[id] = maps.Clone(configs)
	}
	return out
}

// Partitions returns every partition of every topic, by topic name and
// partition index: the full set of roles a broker applies.
func (img *Image) Partitions() []Partition {
	var out []Partition
	for _, t := range img.Topics() {
		out = append(out, t.Partitions...)
	}
	return out
}

// liveBrokers returns the ids of the registered unfenced brokers, ascending.
func (img *Image) liveBrokers() []int32 {
	var ids []int32
	for id, b := range img.brokers {
		if !b.Fenced {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// next returns a copy of img to build the next image in: the maps are new,
// the topics in them still the published ones (replace, never modify them).
func (img *Image) next(index uint64) *Image {
	return &Image{
		index:   index,
		brokers: maps.Clone(img.brokers),
		topics:  maps.Clone(img.topics),
		cursor:  img.cursor,

		groupConfigs: maps.Clone(img.groupConfigs),

		producerIDs: img.producerIDs, // its reported map is shared; a command replaces it

		changed: make(chan struct{}),
	}
}

// mutableTopic replaces the topic called name in an image under
// construction by a copy and returns the copy, which may be modified. Only
// for images returned by next, before they are published.
func (img *Image) mutableTopic(name string) *Topic {
	t := img.topics[name].clone()
	img.topics[name] = &t
	return &t
}

func (t *Topic) clone() Topic {
	c := *t
	c.Configs = maps.Clone(t.Configs)
	c.Partitions = make([]Partition, len(t.Partitions))
	for i, p := range t.Partitions {
		c.Partitions[i] = p.clone()
	}
	return c
}

func (p Partition) clone() Partition {
	p.Replicas = slices.Clone(p.Replicas)
	p.ISR = slices.Clone(p.ISR)
	p.AddingReplicas = slices.Clone(p.AddingReplicas)
	p.RemovingReplicas = slices.Clone(p.RemovingReplicas)
	return p
}

// sameBroker reports whether two registrations are the same.
func sameBroker(a, b Broker) bool {
	return a.ID == b.ID && a.Host == b.Host && a.Port == b.Port && a.Rack == b.Rack &&
		a.Epoch == b.Epoch && a.Fenced == b.Fenced && slices.Equal(a.Listeners, b.Listeners)
}

// sameState reports whether two images hold the same state (index,
// brokers, topics, assignment cursor, producer-id allocation and group
// configs).
func sameState(a, b *Image) bool {
	if a.index != b.index || a.cursor != b.cursor || !maps.EqualFunc(a.brokers, b.brokers, sameBroker) || len(a.topics) != len(b.topics) {
		return false
	}
	if !sameProducerIDs(a.producerIDs, b.producerIDs) {
		return false
	}
	if !maps.EqualFunc(a.groupConfigs, b.groupConfigs, func(x, y map[string]string) bool { return maps.Equal(x, y) }) {
		return false
	}
	for name, ta := range a.topics {
		tb, ok := b.topics[name]
		if !ok || !sameTopic(ta, tb) {
			return false
		}
	}
	return true
}

func sameTopic(a, b *Topic) bool {
	if a.Name != b.Name || a.ID != b.ID || !maps.Equal(a.Configs, b.Configs) || len(a.Partitions) != len(b.Partitions) {
		return false
	}
	for i := range a.Partitions {
		pa, pb := a.Partitions[i], b.Partitions[i]
		if pa.Topic != pb.Topic || pa.TopicID != pb.TopicID || pa.Partition != pb.Partition ||
			!slices.Equal(pa.Replicas, pb.Replicas) || !slices.Equal(pa.ISR, pb.ISR) ||
			pa.Leader != pb.Leader || pa.LeaderEpoch != pb.LeaderEpoch || pa.PartitionEpoch != pb.PartitionEpoch ||
			!slices.Equal(pa.AddingReplicas, pb.AddingReplicas) || !slices.Equal(pa.RemovingReplicas, pb.RemovingReplicas) {
			return false
		}
	}
	return true
}
