package broker

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/internal/testutil"
)

// KIP-848 end to end: three consume-transform-produce pipelines read the
// same input topic, each in its own group — two on the consumer protocol
// (kgo.ServerSideBalancer, one with the uniform assignor and one with
// range) and one on the classic protocol. Each pipeline has two workers;
// workers are killed mid-transaction (connections cut without leaving the
// group: the coordinator must expire them) and restarted with the same
// transactional id. Every pipeline's read_committed output holds every
// input record exactly once.

const mixedPartitions = 6

func mixedProtocolProperties() map[string]string {
	properties := txnTestProperties("2")
	properties["group.consumer.session.timeout.ms"] = "1500"
	properties["group.consumer.heartbeat.interval.ms"] = "200"
	return properties
}

type mixedPipeline struct {
	group, output string
	extra         []kgo.Opt
	workers       [2]*eosWorker
}

func (p *mixedPipeline) start(t *testing.T, addr string, i int) {
	p.workers[i] = startEOSWorkerIn(t, addr, fmt.Sprintf("%s-%d", p.group, i), p.group, "mixed-in", p.output, p.extra...)
}

func TestConsumerProtocolAndClassicGroupsExactlyOnceThroughKills(t *testing.T) {
	t.Parallel()
	const total = 30_000
	b := startTestBroker(t, t.TempDir(), mixedProtocolProperties())
	admin := newTestClient(t, b, kgo.ProducerLinger(5*time.Millisecond), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createTopic(t, admin, "mixed-in", mixedPartitions, nil)
	pipelines := []*mixedPipeline{
		{group: "kip848-uniform", output: "out-uniform", extra: []kgo.Opt{kgo.ServerSideBalancer()}},
		{group: "kip848-range", output: "out-range", extra: []kgo.Opt{kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer())}},
		{group: "classic", output: "out-classic"},
	}
	for _, p := range pipelines {
		createTopic(t, admin, p.output, mixedPartitions, nil)
		p.start(t, b.Addr(), 0)
		p.start(t, b.Addr(), 1)
	}
	t.Cleanup(func() {
		for _, p := range pipelines {
			for _, w := range p.workers {
				w.stop(t)
			}
		}
	})
	ctx := testContext(t, 120*time.Second)
	const chunks = 3
	for chunk := range chunks {
		if chunk > 0 { // kill one worker of each pipeline in its next transaction
			for _, p := range pipelines {
				p.workers[chunk%2].killNext.Store(true)
			}
		}
		for i := chunk * total / chunks; i < (chunk+1)*total/chunks; i++ {
			admin.Produce(ctx, &kgo.Record{Topic: "mixed-in", Partition: int32(i % mixedPartitions), Value: []byte(strconv.Itoa(i) + ":")}, nil)
		}
		if err := admin.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if chunk > 0 {
			for _, p := range pipelines {
				victim := p.workers[chunk%2]
				select {
				case <-victim.done:
				case <-time.After(20 * time.Second):
					t.Fatalf("%s did not reach its next transaction (stage %v)", victim.name, victim.stage.Load())
				}
				if err, _ := victim.err.Load().(error); err != nil {
					t.Fatal(err)
				}
				p.start(t, b.Addr(), chunk%2)
			}
		}
		threshold := int64((chunk + 1) * total / chunks)
		for _, p := range pipelines {
			testutil.Eventually(t, 60*time.Second, fmt.Sprintf("%s: %d input records committed", p.group, threshold), func() (bool, string) {
				committed := committedInputOf(t, admin, p.group, "mixed-in", mixedPartitions)
				return committed >= threshold, fmt.Sprintf("%d committed", committed)
			})
		}
	}
	for _, p := range pipelines {
		for _, w := range p.workers {
			if err, _ := w.err.Load().(error); err != nil {
				t.Fatal(err)
			}
		}
		assertGroupType(t, admin, p)
		writeSentinels(t, b.Addr(), []string{p.output}, mixedPartitions)
		output := consumeToSentinels(t, b.Addr(), []string{p.output}, mixedPartitions, kgo.ReadCommitted())[p.output]
		seen := make([]int, total)
		for _, value := range output {
			number, _, _ := strings.Cut(value, ":")
			i, err := strconv.Atoi(number)
			if err != nil || i < 0 || i >= total {
				t.Fatalf("%s: output record %q is no input record", p.group, value)
			}
			seen[i]++
		}
		missing, duplicated := 0, 0
		for _, count := range seen {
			missing += boolInt(count == 0)
			duplicated += boolInt(count > 1)
		}
		uncommitted := consumeToSentinels(t, b.Addr(), []string{p.output}, mixedPartitions, kgo.ReadUncommitted())[p.output]
		t.Logf("%s: %d input records → %d committed output records (%d missing, %d duplicated); %d including aborted",
			p.group, total, len(output), missing, duplicated, len(uncommitted))
		if missing > 0 || duplicated > 0 || len(output) != total {
			t.Fatalf("%s: output is not every input record exactly once: %d missing, %d duplicated", p.group, missing, duplicated)
		}
		if len(uncommitted) <= total {
			t.Fatalf("%s: no aborted output: the kills did not land mid-transaction", p.group)
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// assertGroupType checks ListGroups v5's type for the pipeline's group.
func assertGroupType(t *testing.T, client *kgo.Client, p *mixedPipeline) {
	t.Helper()
	want := "classic"
	if len(p.extra) > 0 {
		want = "consumer"
	}
	resp, err := kmsg.NewPtrListGroupsRequest().RequestWith(testContext(t, 10*time.Second), client)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range resp.Groups {
		if g.Group == p.group {
			if g.GroupType != want {
				t.Fatalf("group %s listed with type %q, want %q", p.group, g.GroupType, want)
			}
			return
		}
	}
	t.Fatalf("group %s not listed", p.group)
}

// committedInputOf sums a group's committed (stable) offsets on topic.
func committedInputOf(t *testing.T, client *kgo.Client, groupID, topic string, partitions int32) int64 {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	requested := kmsg.NewOffsetFetchRequestGroup()
	requested.Group = groupID
	requestedTopic := kmsg.NewOffsetFetchRequestGroupTopic()
	requestedTopic.Topic = topic
	for p := range partitions {
		requestedTopic.Partitions = append(requestedTopic.Partitions, p)
	}
	requested.Topics = append(requested.Topics, requestedTopic)
	req.Groups = append(req.Groups, requested)
	req.RequireStable = true
	resp, err := req.RequestWith(testContext(t, 10*time.Second), client)
	if err != nil || len(resp.Groups) != 1 {
		return 0
	}
	var sum int64
	for _, answered := range resp.Groups[0].Topics {
		for _, partition := range answered.Partitions {
			if partition.ErrorCode == 0 && partition.Offset > 0 {
				sum += partition.Offset
			}
		}
	}
	return sum
}
