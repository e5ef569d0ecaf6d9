package broker

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The seed's failure class 1: the broker process dies (kill -9) while an
// idempotent producer has batches in flight, and comes back on the same
// data directory. The producer retries; the restarted broker rebuilds the
// producer state from its log and answers the retries of batches it had
// written with their original offsets.
//
// The broker runs as a child process: this test binary re-executed with
// childBrokerEnv set, which init (below) turns into a broker before the
// testing package starts.

// childBrokerEnv holds "<listen address> <data directory> [key=value ...]"
// (broker properties) for a child broker process.
const childBrokerEnv = "EXACTLY_BROKER_TEST_CHILD"

// childHangMarkersEnv, set to 1 in a child broker's environment, makes its
// transaction coordinator stop before writing any marker: it prints
// "markers-pending" once and waits forever (until killed), so a test can
// kill the broker between PrepareCommit and the markers.
const childHangMarkersEnv = "EXACTLY_BROKER_TEST_HANG_MARKERS"

func init() {
	if spec := os.Getenv(childBrokerEnv); spec != "" {
		os.Exit(runChildBroker(spec))
	}
}

// runChildBroker serves a broker until SIGTERM/SIGINT (or until it is
// killed), printing "listening <addr>" once it accepts connections.
func runChildBroker(spec string) int {
	fields := strings.Fields(spec)
	if len(fields) < 2 {
		fmt.Fprintf(os.Stderr, "%s: want \"<listen> <dir> [key=value ...]\", got %q\n", childBrokerEnv, spec)
		return 2
	}
	properties, err := ParseProperties(fields[2:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", childBrokerEnv, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	config := Config{NodeID: 1, Listen: fields[0], DataDir: fields[1], Properties: properties}
	if os.Getenv(childHangMarkersEnv) == "1" {
		var once sync.Once
		config.beforeMarkers = func(ctx context.Context) error {
			once.Do(func() { fmt.Println("markers-pending") })
			<-ctx.Done()
			return ctx.Err()
		}
	}
	b, err := Start(ctx, config)
	if err != nil {
		fmt.Fprintf(os.Stderr, "start broker: %v\n", err)
		return 1
	}
	fmt.Printf("listening %s\n", b.Addr())
	<-ctx.Done()
	if err := b.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "close broker: %v\n", err)
		return 1
	}
	return 0
}

// childBroker is a broker process started by the test.
type childBroker struct {
	cmd    *exec.Cmd
	addr   string
	stderr *bytes.Buffer
	exited chan struct{}
	// lines receives the stdout lines after "listening" (test hooks
	// report on them); lines beyond its buffer are dropped.
	lines chan string
}

// startChildBroker starts a broker process on listen over dir and waits
// until it accepts connections. The process is killed when the test ends.
func startChildBroker(t *testing.T, listen, dir string, properties ...string) *childBroker {
	t.Helper()
	return startChildBrokerEnv(t, nil, listen, dir, properties...)
}

// startChildBrokerEnv is startChildBroker with extra environment variables
// (test hooks such as childHangMarkersEnv).
func startChildBrokerEnv(t *testing.T, env []string, listen, dir string, properties ...string) *childBroker {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childBrokerEnv+"="+strings.Join(append([]string{listen, dir}, properties...), " "))
	cmd.Env = append(cmd.Env, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	child := &childBroker{cmd: cmd, stderr: &bytes.Buffer{}, exited: make(chan struct{}), lines: make(chan string, 16)}
	cmd.Stderr = child.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child broker: %v", err)
	}
	t.Cleanup(func() { child.kill(t) })
	lines := make(chan string, 1)
	go func() {
		scanner := bufio.NewScanner(stdout)
		if scanner.Scan() {
			lines <- scanner.Text()
		}
		close(lines)
		for scanner.Scan() {
			select {
			case child.lines <- scanner.Text():
			default:
			}
		}
		cmd.Wait() // reaps the process; stdout is drained first
		close(child.exited)
	}()
	select {
	case line, ok := <-lines:
		addr, found := strings.CutPrefix(line, "listening ")
		if !ok || !found {
			t.Fatalf("child broker did not start: %q; stderr: %s", line, child.stderr)
		}
		child.addr = addr
	case <-time.After(15 * time.Second):
		t.Fatalf("child broker did not start in time; stderr: %s", child.stderr)
	}
	return child
}

// kill sends SIGKILL and waits for the process to be gone.
func (c *childBroker) kill(t *testing.T) {
	t.Helper()
	select {
	case <-c.exited:
		return
	default:
	}
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Logf("kill child broker %d: %v", c.cmd.Process.Pid, err)
	}
	select {
	case <-c.exited:
	case <-time.After(10 * time.Second):
		t.Errorf("child broker %d did not exit after SIGKILL", c.cmd.Process.Pid)
	}
}

// TestKillBrokerIdempotentProducer: 30k records to 6 partitions; after 3k of
// the second 20k are acknowledged the broker is killed with SIGKILL and
// restarted on the same port and data directory while the producer keeps
// retrying. Every acknowledged record is then in the log exactly once, in
// order per partition, and no record at all appears twice.
func TestKillBrokerIdempotentProducer(t *testing.T) {
	t.Parallel()
	const (
		before, during = 10_000, 20_000
		killAfterAcks  = 3_000
	)
	dir := t.TempDir()
	// acks=all waits for a sync every 50 ms: batches are in the log for a
	// while before they are acknowledged, so the kill finds some written
	// but unacknowledged, whose retries must be recognised after restart.
	// (SIGKILL loses no written byte: the page cache survives the process.)
	const fsync = "log.fsync=interval:50ms"
	first := startChildBroker(t, "127.0.0.1:0", dir, fsync)
	producer := newCrashProducer(t, first.addr)
	createTopic(t, producer, "crash", testPartitions, nil)

	var acked sync.Map // record index → struct{}
	var ackedDuring, failed atomic.Int64
	killNow := make(chan struct{})
	var killOnce sync.Once
	produce := func(ctx context.Context, from, to int) {
		for i := from; i < to; i++ {
			record := &kgo.Record{Topic: "crash", Partition: int32(i % testPartitions), Key: []byte(strconv.Itoa(i)), Value: ackLossValue(i)}
			producer.Produce(ctx, record, func(_ *kgo.Record, err error) {
				if err != nil {
					failed.Add(1)
					return
				}
				acked.Store(i, struct{}{})
				if i >= before && ackedDuring.Add(1) == killAfterAcks {
					killOnce.Do(func() { close(killNow) })
				}
			})
		}
	}
	ctx := testContext(t, 90*time.Second)
	produce(ctx, 0, before)
	if err := producer.Flush(ctx); err != nil {
		t.Fatalf("flush before the kill: %v", err)
	}
	produce(ctx, before, before+during)
	select {
	case <-killNow:
	case <-ctx.Done():
		t.Fatal("the second run was never acknowledged far enough to kill the broker")
	}
	first.kill(t)
	ackedAtKill := ackedDuring.Load()
	second := startChildBroker(t, first.addr, dir, fsync)
	if err := producer.Flush(ctx); err != nil {
		t.Fatalf("flush after the restart: %v", err)
	}
	if ackedAtKill >= during {
		t.Fatalf("all %d records were acknowledged before the kill landed; nothing was in flight", during)
	}
	seen := checkCrashRun(t, consumeChild(t, second.addr, "crash"), &acked)
	t.Logf("killed after %d of %d acknowledgements; %d records failed; %d in the log, each once, in order",
		ackedAtKill, during, failed.Load(), seen)
}

// newCrashProducer is an idempotent producer that retries without limit
// for long enough to outlast a broker restart.
func newCrashProducer(t *testing.T, addr string) *kgo.Client {
	t.Helper()
	producer, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchMaxBytes(8<<10),
		kgo.RecordDeliveryTimeout(60*time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }),
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(producer.Close)
	return producer
}

// checkCrashRun checks what a consumer found after the crash: every
// acknowledged record exactly once, no record twice, each partition in
// order, all under one producer id and epoch. It returns how many distinct
// records the log holds.
func checkCrashRun(t *testing.T, got map[int32][]*kgo.Record, acked *sync.Map) int {
	t.Helper()
	// The restarted broker knew the producer: it never had to give up its
	// id (franz-go takes a new one, or bumps the epoch, after
	// OUT_OF_ORDER_SEQUENCE_NUMBER or UNKNOWN_PRODUCER_ID), so one producer
	// id and epoch wrote everything.
	producerIDs := map[[2]int64]int{}
	for _, records := range got {
		for _, r := range records {
			producerIDs[[2]int64{r.ProducerID, int64(r.ProducerEpoch)}]++
		}
	}
	if len(producerIDs) != 1 {
		t.Fatalf("records written under %d producer ids/epochs, want 1: %v", len(producerIDs), producerIDs)
	}
	counts := countDeliveries(t, got)
	missing := 0
	acked.Range(func(key, _ any) bool {
		if counts.seen[key.(int)] != 1 {
			missing++
		}
		return true
	})
	if missing != 0 || counts.duplicates != 0 || counts.outOfOrder != 0 {
		t.Fatalf("%d acknowledged records missing or repeated, %d duplicates, %d out of order", missing, counts.duplicates, counts.outOfOrder)
	}
	return len(counts.seen)
}

// consumeChild reads every partition of topic from a broker at addr up to
// the end offsets it reports at the start.
func consumeChild(t *testing.T, addr, topic string) map[int32][]*kgo.Record {
	t.Helper()
	admin, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	ends := listEndOffsets(t, admin, topic)
	offsets := map[int32]kgo.Offset{}
	for partition := range ends {
		offsets[partition] = kgo.NewOffset().AtStart()
	}
	client, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx := testContext(t, 30*time.Second)
	got := map[int32][]*kgo.Record{}
	remaining := len(ends)
	for partition, end := range ends {
		if end == 0 {
			remaining--
			delete(ends, partition)
		}
	}
	for remaining > 0 {
		fetches := client.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consume %s: deadline passed", topic)
		}
		fetches.EachError(func(topic string, partition int32, err error) {
			t.Fatalf("fetch %s-%d: %v", topic, partition, err)
		})
		fetches.EachRecord(func(r *kgo.Record) {
			got[r.Partition] = append(got[r.Partition], r)
			if end, ok := ends[r.Partition]; ok && r.Offset+1 >= end {
				delete(ends, r.Partition)
				remaining--
			}
		})
	}
	return got
}

// listEndOffsets asks ListOffsets for the log end offset (timestamp -1) of
// every partition of topic (testPartitions of them).
func listEndOffsets(t *testing.T, client *kgo.Client, topic string) map[int32]int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for partition := range int32(testPartitions) {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = partition, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testContext(t, 10*time.Second), client)
	if err != nil {
		t.Fatalf("list offsets: %v", err)
	}
	ends := map[int32]int64{}
	for _, topic := range resp.Topics {
		for _, partition := range topic.Partitions {
			if err := kerr.ErrorForCode(partition.ErrorCode); err != nil {
				t.Fatalf("list offsets %s-%d: %v", topic.Topic, partition.Partition, err)
			}
			ends[partition.Partition] = partition.Offset
		}
	}
	return ends
}
