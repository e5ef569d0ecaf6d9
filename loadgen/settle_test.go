package loadgen

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/broker/clusternode"
	"github.com/exactly-eos/exactly/internal/testutil"
	"github.com/exactly-eos/exactly/loadgen/verify"
)

// openTransactionTopic writes, to one partition of a fresh topic on our
// broker: three records of a transaction that is then aborted, one record
// of a second producer's transaction left open (its producer closed
// without ending it), and two committed records of a third, so the log is
//
//	0-2 aborted data, 3 open data, 4 abort marker, 5-6 committed, 7 commit marker
//
// and the last stable offset stops at 3, right after aborted data that a
// read_committed client drops. The open transaction times out after
// openTimeout, and the broker aborts it on its next check (every 200 ms).
func openTransactionTopic(t *testing.T, openTimeout time.Duration) (bootstrap []string, topic string) {
	t.Helper()
	target, err := startEmbeddedWith(t.Context(), t.TempDir(), map[string]string{
		"transaction.abort.timed.out.transaction.cleanup.interval.ms": "200"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { target.Close() }) // before its data directory goes
	bootstrap, topic = target.Bootstrap(), "settle"
	admin, err := kgo.NewClient(kgo.SeedBrokers(bootstrap...))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if err := createTopic(t.Context(), admin, topic, 1, 1); err != nil {
		t.Fatal(err)
	}
	transactional := func(id string, timeout time.Duration) *kgo.Client {
		client, err := kgo.NewClient(kgo.SeedBrokers(bootstrap...), kgo.TransactionalID(id), kgo.TransactionTimeout(timeout),
			kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err != nil {
			t.Fatal(err)
		}
		if err := client.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		return client
	}
	produce := func(client *kgo.Client, sequences ...uint64) {
		t.Helper()
		for _, seq := range sequences {
			record := &kgo.Record{Value: verify.NewValue(verify.Header{RunID: 1, Sequence: seq}, 40)}
			if err := client.ProduceSync(t.Context(), record).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	aborted, open, committed := transactional("aborted", time.Minute), transactional("open", openTimeout), transactional("committed", time.Minute)
	defer aborted.Close()
	defer committed.Close()
	produce(aborted, 0, 1, 2)
	produce(open, 3)
	open.Close() // without ending its transaction: only the timeout ends it
	if err := aborted.EndTransaction(t.Context(), kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	produce(committed, 5, 6)
	if err := committed.EndTransaction(t.Context(), kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	return bootstrap, topic
}

// TestReadBackWaitsForOpenTransactions: a read_committed read-back that
// begins while a transaction is still open waits for the broker to abort
// it, then reads every committed record, including those written after
// the open transaction began; the record just below the last stable
// offset it started with belongs to an aborted transaction, which the
// client never returns.
func TestReadBackWaitsForOpenTransactions(t *testing.T) {
	t.Parallel()
	bootstrap, topic := openTransactionTopic(t, 3*time.Second)
	admin, err := kgo.NewClient(kgo.SeedBrokers(bootstrap...))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if ends, err := endOffsets(t.Context(), admin, topic, 1, true); err != nil || ends[0] != 3 {
		t.Fatalf("last stable offset before the timeout %v (%v), want 3: the open transaction must hold it", ends, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var read []int64
	ends, complete, err := readBack(ctx, admin, []kgo.Opt{kgo.SeedBrokers(bootstrap...)}, topic, 1, verify.ReadCommitted,
		ignorePolls{}, func(record *kgo.Record) { read = append(read, record.Offset) })
	if err != nil || !complete {
		t.Fatalf("read back: complete %v, %v", complete, err)
	}
	if ends[0] != 9 { // ... 7 commit marker, 8 the timeout's abort marker
		t.Errorf("end %d, want 9", ends[0])
	}
	if len(read) != 2 || read[0] != 5 || read[1] != 6 {
		t.Errorf("read offsets %v, want the committed 5 and 6", read)
	}
}

// TestReadBackNamesOpenTransactions: when a transaction outlasts the
// read-back's wait, the read-back is incomplete and its error names the
// partition, its offsets and the open transaction's producer and first
// offset.
func TestReadBackNamesOpenTransactions(t *testing.T) {
	t.Parallel()
	bootstrap, topic := openTransactionTopic(t, time.Minute)
	admin, err := kgo.NewClient(kgo.SeedBrokers(bootstrap...))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	ends, complete, err := readBack(ctx, admin, []kgo.Opt{kgo.SeedBrokers(bootstrap...)}, topic, 1, verify.ReadCommitted,
		ignorePolls{}, func(*kgo.Record) {})
	var open *openTransactionsError
	if !errors.As(err, &open) || complete {
		t.Fatalf("read back: complete %v, error %v; want incomplete with the open transactions", complete, err)
	}
	if ends[0] != 3 {
		t.Errorf("end %d, want the last stable offset 3", ends[0])
	}
	for _, want := range []string{"settle[0] last stable offset 3, high watermark 8", "from offset 3"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// ignorePolls is a verify.PollSink that keeps nothing.
type ignorePolls struct{}

func (ignorePolls) Assigned([]int32)                          {}
func (ignorePolls) Revoked([]int32)                           {}
func (ignorePolls) Rewound([]int32)                           {}
func (ignorePolls) Polled(int32, []verify.PolledRecord, bool) {}

// TestEndOffsetsWaitsForABrokerComingBack: a broker that a fault killed
// and restarted refuses connections until it listens again; the end
// offsets are asked again until it answers, rather than failing the
// read-back on the first refused connection.
func TestEndOffsetsWaitsForABrokerComingBack(t *testing.T) {
	t.Parallel()
	addr := testutil.FreeAddr(t)
	admin, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	go func() {
		time.Sleep(time.Second)
		m, err := clusternode.Start(clusternode.Config{Listen: addr, DataDir: t.TempDir()})
		if err != nil {
			t.Error(err)
			return
		}
		t.Cleanup(func() { m.Close() })
		creator, err := kgo.NewClient(kgo.SeedBrokers(addr))
		if err != nil {
			t.Error(err)
			return
		}
		defer creator.Close()
		if err := createTopic(t.Context(), creator, "back", 1, 1); err != nil {
			t.Error(err)
		}
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	ends, err := endOffsets(ctx, admin, "back", 1, false)
	if err != nil || ends[0] != 0 {
		t.Fatalf("end offsets while the broker comes back: %v, %v", ends, err)
	}
}
