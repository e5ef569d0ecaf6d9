package loadgen

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/internal/testenv"
	"github.com/exactly-eos/exactly/internal/wait"
	"github.com/exactly-eos/exactly/loadgen/appdb"
	"github.com/exactly-eos/exactly/loadgen/stages"
	"github.com/exactly-eos/exactly/loadgen/verify"
)

// A copy is unprotected when its first copy sat below the window's floor
// when it was written; a copy within the window is a duplicate.
func TestUnprotectedCopiesAreTheOnesBeyondTheWindow(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	stats := &stages.Stats{}
	stage, err := stages.NewDBStage(stages.DBSpec{Mode: ModeExternalOffsets, Options: []kgo.Opt{kgo.SeedBrokers(target.Bootstrap()...)},
		ClientID: "seek-test", Group: "seek-test", Input: topic, Run: topic, Worker: "w0", Window: 1}, db, stageMetrics{newRunMetrics(time.Now())}, stats)
	if err != nil {
		t.Fatal(err)
	}
	stageCtx, stopStage := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- stage.Work(stageCtx, nil) }()
	for {
		stored, err := db.LoadOffsets(ctx, topic, []int32{0})
		if err != nil {
			t.Fatal(err)
		}
		if stored[0] == 100 {
			break
		}
		if !wait.Until(ctx, time.Now().Add(20*time.Millisecond)) {
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
	if len(offsets) != 40 || offsets[0] != 60 || offsets[39] != 99 || stats.Seeks.Load() == 0 {
		t.Fatalf("%d rows from offset %v, %d seeks; want offsets 60..99 once each after a seek", len(offsets), offsets[:min(len(offsets), 3)],
			stats.Seeks.Load())
	}
	for i, offset := range offsets {
		if offset != int64(60+i) {
			t.Fatalf("row %d holds offset %d, want %d", i, offset, 60+i)
		}
	}
}
