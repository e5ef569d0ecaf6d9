package group

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
)

// fakeCatalog is a TopicCatalog the test changes between steps.
type fakeCatalog struct {
	topics map[string]int32
}

func topicIDOf(name string) [16]byte {
	var id [16]byte
	copy(id[:], name)
	return id
}

func (f *fakeCatalog) TopicPartitions(name string) ([16]byte, int32, bool) {
	count, ok := f.topics[name]
	return topicIDOf(name), count, ok
}

func (f *fakeCatalog) TopicNames() []string {
	var names []string
	for name := range f.topics {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// modelClient is a well-behaved consumer-protocol client: it owns what the
// coordinator assigned, and gives up revoked partitions at once (fast) or
// one heartbeat later (slow: it keeps reporting them once).
type modelClient struct {
	id       string
	instance *string
	epoch    int32
	owned    partitions
	// revoking are partitions it was told to drop and still owns (slow).
	revoking partitions
	slow     bool
	topics   []string
	regex    *string
	assignor *string
	joined   bool
}

func (m *modelClient) heartbeat(h *harness, group string) error {
	req := ConsumerHeartbeatRequest{Group: group, MemberID: m.id, MemberEpoch: m.epoch, InstanceID: m.instance,
		RebalanceTimeoutMillis: 60000, SubscribedTopicNames: m.topics, SubscribedTopicRegex: m.regex,
		ServerAssignor: m.assignor, MemberIDRequired: true, Client: testClient, Owned: m.owned.list()}
	if !m.joined {
		req.MemberEpoch, req.Owned = 0, []TopicPartitions{}
	}
	result, err := h.c.ConsumerHeartbeat(testCtx, req)
	if err != nil {
		// Fenced or unknown: drop everything and rejoin, as clients do.
		m.owned, m.revoking, m.joined, m.epoch = partitions{}, partitions{}, false, 0
		return err
	}
	m.joined, m.epoch = true, result.MemberEpoch
	if m.slow {
		for id, list := range m.revoking { // the revocation finishes now
			for _, p := range list {
				removePartition(m.owned, id, p)
			}
		}
		m.revoking = partitions{}
	}
	if result.Assignment != nil {
		assigned := partitionsFrom(*result.Assignment)
		for id, list := range m.owned {
			for _, p := range list {
				if !assigned.has(id, p) {
					if m.slow {
						m.revoking.add(id, p)
					} else {
						removePartition(m.owned, id, p)
					}
				}
			}
		}
		for id, list := range assigned {
			for _, p := range list {
				m.owned.add(id, p)
			}
		}
	}
	return nil
}

func removePartition(set partitions, id [16]byte, partition int32) {
	list := slices.DeleteFunc(slices.Clone(set[id]), func(p int32) bool { return p == partition })
	if len(list) == 0 {
		delete(set, id)
	} else {
		set[id] = list
	}
}

// checkConsumerOwnership fails if a partition is held by two members of
// the coordinator's group, or owned by two live clients.
func checkConsumerOwnership(t *testing.T, h *harness, groupID string, clients []*modelClient, step string) {
	t.Helper()
	h.inspect(groupID, func(g *group) bool {
		if g.consumer == nil {
			return true
		}
		seen := map[string]string{}
		for id, m := range g.consumer.members {
			for _, set := range []partitions{m.assigned, m.pendingRevocation} {
				for topic, list := range set {
					for _, p := range list {
						key := fmt.Sprintf("%x/%d", topic, p)
						if other, ok := seen[key]; ok {
							t.Fatalf("%s: partition %s held by %s and %s", step, key, other, id)
						}
						seen[key] = id
					}
				}
			}
		}
		return true
	})
	owner := map[string]string{}
	for _, c := range clients {
		for topic, list := range c.owned {
			for _, p := range list {
				key := fmt.Sprintf("%x/%d", topic, p)
				if other, ok := owner[key]; ok {
					t.Fatalf("%s: partition %s owned by clients %s and %s at once", step, key, other, c.id)
				}
				owner[key] = c.id
			}
		}
	}
}

// TestConsumerGroupModel drives the consumer group protocol with random
// joins, heartbeats, slow revocations, leaves, static leaves and rejoins,
// kills (a client that stops heartbeating until its session expires),
// subscription and topic changes and coordinator restarts, checking after
// every step that no partition is held by two members (nor owned by two
// live clients), and at the end that once everyone keeps heartbeating
// every subscribed partition is assigned and every member is stable.
func TestConsumerGroupModel(t *testing.T) {
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runConsumerModel(t, seed) })
	}
}

func runConsumerModel(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 848))
	catalog := &fakeCatalog{topics: map[string]int32{"a": 4, "b": 3}}
	h := newHarness(t, func(cfg *Config) {
		cfg.Catalog = catalog
		cfg.ConsumerSessionTimeout = 10 * time.Second
	})
	const group = "model"
	assignor := []string{uniformAssignor, rangeAssignor}[seed%2]
	var live []*modelClient
	next := 0
	newClient := func() *modelClient {
		next++
		c := &modelClient{id: fmt.Sprintf("m%02d", next), owned: partitions{}, revoking: partitions{}, slow: rng.IntN(2) == 0, topics: []string{"a", "b"}}
		if rng.IntN(3) == 0 {
			instance := fmt.Sprintf("i%d", rng.IntN(3))
			c.instance = &instance
		}
		if rng.IntN(4) == 0 {
			regex := "c.*"
			c.regex, c.topics = &regex, []string{"a"}
		}
		c.assignor = &assignor
		return c
	}
	for step := range 300 {
		what := ""
		switch op := rng.IntN(20); {
		case op < 3 && len(live) < 6:
			c := newClient()
			what = "join " + c.id
			if err := c.heartbeat(h, group); err != nil && !errors.Is(err, ErrUnreleasedInstance) {
				t.Fatalf("step %d %s: %v", step, what, err)
			} else if err == nil {
				live = append(live, c)
			}
		case op < 14 && len(live) > 0:
			c := live[rng.IntN(len(live))]
			what = "heartbeat " + c.id
			_ = c.heartbeat(h, group) // a fenced client rejoins on its next heartbeat
		case op == 14 && len(live) > 0:
			i := rng.IntN(len(live))
			c := live[i]
			what = "leave " + c.id
			epoch := LeaveEpoch
			if c.instance != nil && rng.IntN(2) == 0 {
				epoch = StaticLeaveEpoch
			}
			_, _ = h.c.ConsumerHeartbeat(testCtx, ConsumerHeartbeatRequest{Group: group, MemberID: c.id, MemberEpoch: epoch, InstanceID: c.instance, MemberIDRequired: true})
			live = slices.Delete(live, i, i+1)
		case op == 15 && len(live) > 0:
			i := rng.IntN(len(live))
			what = "kill " + live[i].id // stops heartbeating; the coordinator expires it
			live = slices.Delete(live, i, i+1)
		case op == 16:
			what = "tick"
			// Live clients heartbeat often enough to survive.
			for _, c := range live {
				_ = c.heartbeat(h, group)
			}
			h.tickAfter(4 * time.Second)
		case op == 17:
			what = "topics change"
			catalog.topics["a"] = min(catalog.topics["a"]+1, 8)
			catalog.topics[fmt.Sprintf("c%d", rng.IntN(3))] = 2
		case op == 18 && len(live) > 0:
			c := live[rng.IntN(len(live))]
			what = "resubscribe " + c.id
			c.topics = [][]string{{"a"}, {"b"}, {"a", "b"}}[rng.IntN(3)]
		case op == 19:
			what = "restart"
			before := describeForCompare(t, h, group)
			h.restart()
			if after := describeForCompare(t, h, group); !reflect.DeepEqual(before, after) {
				t.Fatalf("step %d: restart changed the group:\nbefore %+v\nafter  %+v", step, before, after)
			}
		default:
			continue
		}
		checkConsumerOwnership(t, h, group, live, fmt.Sprintf("step %d (%s)", step, what))
	}
	// Convergence: everyone heartbeats; the zombies expire.
	h.tickAfter(11 * time.Second)
	for round := range 20 {
		for _, c := range live {
			_ = c.heartbeat(h, group)
		}
		checkConsumerOwnership(t, h, group, live, fmt.Sprintf("convergence round %d", round))
	}
	described, err := h.c.DescribeConsumerGroup(group)
	if err != nil {
		t.Fatalf("describe: %v", err)
	}
	if len(live) == 0 {
		return
	}
	if described.State != consumerStateStable || len(described.Members) != len(live) {
		t.Fatalf("after convergence: state %s with %d members, want Stable with %d: %+v", described.State, len(described.Members), len(live), described)
	}
	assigned := 0
	for _, m := range described.Members {
		if m.MemberEpoch != described.AssignmentEpoch {
			t.Fatalf("member %s at epoch %d, assignment epoch %d", m.MemberID, m.MemberEpoch, described.AssignmentEpoch)
		}
		assigned += partitionsFrom(m.Assignment).count()
	}
	want := 0
	for name, count := range catalog.topics {
		for _, c := range live {
			if slices.Contains(c.topics, name) || (c.regex != nil && name[0] == 'c') {
				want += int(count)
				break
			}
		}
	}
	if assigned != want {
		t.Fatalf("after convergence %d partitions assigned, want every subscribed one (%d)", assigned, want)
	}
}

// describeForCompare is the group's description without what a restart
// legitimately changes (nothing, for a consumer group).
func describeForCompare(t *testing.T, h *harness, group string) *ConsumerGroupDescription {
	t.Helper()
	described, err := h.c.DescribeConsumerGroup(group)
	if errors.Is(err, ErrGroupNotFound) {
		return nil
	}
	if err != nil {
		t.Fatalf("describe: %v", err)
	}
	return &described
}
