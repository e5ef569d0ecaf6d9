package bench

// Fast checks of the delivery-mode and fetch benchmarks' machinery:
// `go test ./bench/` runs them at a small volume.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestDeliveryModesDeliver produces two rounds in every mode of
// BenchmarkDeliveryModes and reads the topic back read_committed: every
// record arrives (nothing is lost on loopback without faults, even at
// acks=0) and a transactional producer leaves no transaction open.
func TestDeliveryModesDeliver(t *testing.T) {
	const perRound = 500
	server := startModesBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, mode := range deliveryModes {
		p := newModeProducer(t, server.Addr(), mode, mode.name)
		for round := range 2 {
			if err := p.produceRound(ctx, recordValue, perRound, round == 1); err != nil {
				t.Fatal(err)
			}
		}
		if p.produced != 2*perRound || p.elapsed <= 0 {
			t.Fatalf("%s: %d records produced in %v", mode.name, p.produced, p.elapsed)
		}
		if p.ackLatency.TotalCount() != 2*perRound {
			t.Fatalf("%s: %d acknowledgement latencies, want %d", mode.name, p.ackLatency.TotalCount(), 2*perRound)
		}
		if mode.commitInterval > 0 && (p.commits < 1 || p.inTransaction) {
			t.Fatalf("%s: %d commits, transaction open %v", mode.name, p.commits, p.inTransaction)
		}
		if err := countCommitted(ctx, server.Addr(), mode.name, 2*perRound); err != nil {
			t.Fatalf("%s: %v", mode.name, err)
		}
	}
}

// TestTransactionalCommitClock checks that a transactional producer
// commits on its producing-time clock: with a 1 µs interval it commits at
// every look at the clock (every commitCheckEvery records), across rounds.
func TestTransactionalCommitClock(t *testing.T) {
	const perRound = 10 * commitCheckEvery
	server := startModesBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	mode := deliveryMode{name: "transactional-1us", commitInterval: time.Microsecond}
	p := newModeProducer(t, server.Addr(), mode, mode.name)
	for round := range 3 {
		if err := p.produceRound(ctx, recordValue, perRound, round == 2); err != nil {
			t.Fatal(err)
		}
	}
	// Looks at records 0, 32, ..., 288 of each round; the first look of
	// the first round begins the first transaction, every later look
	// commits one, and the final round's end commits the last.
	if want := 3 * perRound / commitCheckEvery; p.commits != want {
		t.Fatalf("%d commits, want %d", p.commits, want)
	}
	if p.endLatency.TotalCount() != int64(p.commits) {
		t.Fatalf("%d commit latencies for %d commits", p.endLatency.TotalCount(), p.commits)
	}
	if err := countCommitted(ctx, server.Addr(), mode.name, 3*perRound); err != nil {
		t.Fatal(err)
	}
}

// countCommitted reads topic read_committed from the start until want
// records arrived, and fails if the polls brought more.
func countCommitted(ctx context.Context, addr, topic string, want int) error {
	client, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
	)
	if err != nil {
		return err
	}
	defer client.Close()
	got := 0
	for got < want {
		fetches := client.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("read %d of %d records: %w", got, want, err)
		}
		if err := fetches.Err(); err != nil {
			return err
		}
		got += fetches.NumRecords()
	}
	// A poll that carried records beyond want shows a duplicate or a
	// stray record.
	if got != want {
		return fmt.Errorf("read %d records, want %d", got, want)
	}
	return nil
}
