package loadgen

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/internal/testenv"
	"github.com/exactly-eos/exactly/loadgen/appdb"
	"github.com/exactly-eos/exactly/loadgen/verify"
)

func keyed(key string, offset int64) *kgo.Record {
	return &kgo.Record{Key: []byte(key), Offset: offset}
}

// The dedup window drops a key it holds and a key repeated within one
// poll, and forgets keys below its floor.
func TestDedupWindowFiltersSeenKeys(t *testing.T) {
	window := dedupWindow{size: 3, highest: 10}
	if window.floor() != 8 {
		t.Fatalf("floor = %d with highest 10 and size 3, want 8 (offsets 8, 9, 10 held)", window.floor())
	}
	if (dedupWindow{size: 3, highest: -1}).floor() != 0 {
		t.Fatal("an empty window's floor must be 0")
	}
	records := []*kgo.Record{keyed("a", 11), keyed("b", 12), keyed("a", 13), keyed("c", 14)}
	kept := window.filter(records, map[string]bool{"b": true})
	if len(kept) != 2 || string(kept[0].Key) != "a" || kept[0].Offset != 11 || string(kept[1].Key) != "c" {
		t.Fatalf("kept %v, want a@11 and c@14", kept)
	}
}

// A copy is unprotected when its first copy sat below the window's floor
// when it was written; a copy within the window is a duplicate.
func TestUnprotectedCopiesAreTheOnesBeyondTheWindow(t *testing.T) {
	counter := newUnprotectedCounter()
	counter.observe(appdb.Row{Producer: 0, Seq: 1, Offset: 5, WindowFloor: 0})
	counter.observe(appdb.Row{Producer: 0, Seq: 1, Offset: 9, WindowFloor: 5})  // first copy at 5 still held: a duplicate
	counter.observe(appdb.Row{Producer: 0, Seq: 1, Offset: 30, WindowFloor: 6}) // 5 forgotten: unprotected
	counter.observe(appdb.Row{Producer: 1, Seq: 1, Offset: 2, WindowFloor: -1})
	counter.observe(appdb.Row{Producer: 1, Seq: 1, Offset: 2, WindowFloor: -1}) // no window: a duplicate
	if counter.count != 1 {
		t.Fatalf("unprotected = %d, want 1", counter.count)
	}
}

// On assignment the external-offsets stage starts each partition at its
// stored offset, and leaves partitions without one where kgo put them.
func TestSeekOffsetsMovesToStoredOffsets(t *testing.T) {
	assigned := map[string]map[int32]kgo.Offset{
		"in":    {0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart()},
		"other": {1: kgo.NewOffset().At(3)},
	}
	seeked := seekOffsets(assigned, "in", map[int32]int64{1: 42, 7: 9})
	if got := seeked["in"][1].EpochOffset(); got.Offset != 42 || got.Epoch != -1 {
		t.Errorf("partition 1 at %+v, want offset 42 without an epoch", got)
	}
	if got := seeked["in"][0].EpochOffset(); got != kgo.NewOffset().AtStart().EpochOffset() {
		t.Errorf("partition 0 moved to %+v without a stored offset", got)
	}
	if got := seeked["other"][1].EpochOffset(); got.Offset != 3 {
		t.Errorf("another topic moved to %+v", got)
	}
	if _, added := seeked["in"][7]; added {
		t.Error("a stored offset of a partition not assigned was added")
	}
}

// openTestSQLite opens an SQLite application database with its tables
// in a temporary directory.
func openTestSQLite(t *testing.T) *appdb.DB {
	t.Helper()
	db, err := appdb.Open(t.Context(), filepath.Join(t.TempDir(), "app.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.CreateSchema(t.Context()); err != nil {
		t.Fatal(err)
	}
	return db
}

// postgresURLEnv names the PostgreSQL server of the postgres path's
// tests; ci/postgres.sh starts one and sets it.
const postgresURLEnv = "EXACTLY_TEST_POSTGRES_URL"

// postgresURL returns the test server's URL once it answers. Unset, or
// set to a server that does not answer, the test is skipped with one line
// outside CI and fails in CI (CI=true or EXACTLY_CI set), where
// ci/postgres.sh must have started the server (internal/testenv).
func postgresURL(t *testing.T) string {
	t.Helper()
	const howToGet = "ci/postgres.sh starts a throwaway server and sets " + postgresURLEnv + "; or set it to a postgres:// URL of a database you may write"
	url := os.Getenv(postgresURLEnv)
	if url == "" {
		testenv.Missing(t, "PostgreSQL ("+postgresURLEnv+" is not set)", howToGet)
		return ""
	}
	db, err := appdb.Open(t.Context(), url)
	if err != nil {
		testenv.Missing(t, "PostgreSQL at "+appdb.RedactURL(url), err.Error())
		return ""
	}
	db.Close()
	return url
}

// The seek() road against a real group: offsets stored in the
// database win over Kafka's (there are none): a stage assigned the
// partition starts at the stored offset, processes the rest exactly once
// and leaves the stored offset at the end.
func TestExternalOffsetsSeekToStoredOffsetOnAssignment(t *testing.T) {
	target := newKfakeTarget(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	admin, err := kgo.NewClient(kgo.SeedBrokers(target.Bootstrap()...))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	const topic = "seek-test"
	if err := createTopic(ctx, admin, topic, 1, 1); err != nil {
		t.Fatal(err)
	}
	for seq := range uint64(100) {
		value := verify.NewValue(verify.Header{RunID: 1, Sequence: seq, SendTime: time.Now().UnixNano()}, 64)
		if err := admin.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: value}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	db := openTestSQLite(t)
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.AdvanceOffset(ctx, tx, topic, 0, 0, false, 60); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	stats := &applicationStats{}
	stage, err := newDBStage(dbStageSpec{mode: ModeExternalOffsets, options: []kgo.Opt{kgo.SeedBrokers(target.Bootstrap()...)},
		clientID: "seek-test", group: "seek-test", input: topic, run: topic, worker: "w0", window: 1}, db, newRunMetrics(time.Now()), stats)
	if err != nil {
		t.Fatal(err)
	}
	stageCtx, stopStage := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- stage.work(stageCtx, nil) }()
	for {
		stored, err := db.LoadOffsets(ctx, topic, []int32{0})
		if err != nil {
			t.Fatal(err)
		}
		if stored[0] == 100 {
			break
		}
		if !sleepUntil(ctx, time.Now().Add(20*time.Millisecond)) {
			t.Fatalf("stored offset %v, never reached 100", stored)
		}
	}
	stopStage()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var offsets []int64
	if err := db.ReadOutput(ctx, topic, func(row appdb.Row) { offsets = append(offsets, row.Offset) }); err != nil {
		t.Fatal(err)
	}
	if len(offsets) != 40 || offsets[0] != 60 || offsets[39] != 99 || stats.seeks.Load() == 0 {
		t.Fatalf("%d rows from offset %v, %d seeks; want offsets 60..99 once each after a seek", len(offsets), offsets[:min(len(offsets), 3)],
			stats.seeks.Load())
	}
	for i, offset := range offsets {
		if offset != int64(60+i) {
			t.Fatalf("row %d holds offset %d, want %d", i, offset, 60+i)
		}
	}
}
