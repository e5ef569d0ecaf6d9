package loadgen

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/internal/testenv"
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
	counter.observe(outputRow{producer: 0, seq: 1, offset: 5, windowFloor: 0})
	counter.observe(outputRow{producer: 0, seq: 1, offset: 9, windowFloor: 5})  // first copy at 5 still held: a duplicate
	counter.observe(outputRow{producer: 0, seq: 1, offset: 30, windowFloor: 6}) // 5 forgotten: unprotected
	counter.observe(outputRow{producer: 1, seq: 1, offset: 2, windowFloor: -1})
	counter.observe(outputRow{producer: 1, seq: 1, offset: 2, windowFloor: -1}) // no window: a duplicate
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

func openTestSQLite(t *testing.T) *appDB {
	t.Helper()
	db, err := openAppDB(t.Context(), filepath.Join(t.TempDir(), "app.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.createSchema(t.Context()); err != nil {
		t.Fatal(err)
	}
	return db
}

func TestApplicationStoreSQLite(t *testing.T) {
	testApplicationStore(t, openTestSQLite(t))
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
	db, err := openAppDB(t.Context(), url)
	if err != nil {
		testenv.Missing(t, "PostgreSQL at "+redactURL(url), err.Error())
		return ""
	}
	db.Close()
	return url
}

// A PostgreSQL URL where nothing listens fails at open, in one line that
// names the cause and the fix and shows neither password of the URL.
func TestOpenAppDBPostgresErrorIsOneLineWithoutPassword(t *testing.T) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	address := listener.Addr().String()
	listener.Close()
	dsn := "postgres://nobody:secret@" + address + "/x?sslmode=disable&password=hunter2"
	db, err := openAppDB(t.Context(), dsn)
	if err == nil {
		db.Close()
		t.Fatalf("opened %s, where nothing listens", address)
	}
	text := err.Error()
	for _, want := range []string{"application database postgres://nobody@" + address + "/x?", "cannot connect (connection refused)",
		"check the URL and that PostgreSQL is running", "leave --db out"} {
		if !strings.Contains(text, want) {
			t.Errorf("error %q lacks %q", text, want)
		}
	}
	if strings.Contains(text, "\n") || strings.Contains(text, "secret") || strings.Contains(text, "hunter2") {
		t.Errorf("error spans lines or shows a password: %q", text)
	}
}

func TestApplicationStorePostgres(t *testing.T) {
	db, err := openAppDB(t.Context(), postgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.createSchema(t.Context()); err != nil {
		t.Fatal(err)
	}
	testApplicationStore(t, db)
}

// testApplicationStore checks the store operations both dialects share:
// schema creation is idempotent, offsets move only by compare-and-set,
// the dedup window forgets keys below its floor, rows read back in
// insertion order per partition, and a run's rows can be deleted.
func testApplicationStore(t *testing.T, db *appDB) {
	ctx := t.Context()
	if err := db.createSchema(ctx); err != nil {
		t.Fatalf("second createSchema: %v", err)
	}
	run := fmt.Sprintf("test-run-%016x", rand.Uint64())
	t.Cleanup(func() { _ = db.deleteRun(context.Background(), run) })
	inTx := func(body func(tx *sql.Tx) error) error {
		tx, err := db.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if err := body(tx); err != nil {
			tx.Rollback()
			return err
		}
		return tx.Commit()
	}
	advance := func(from int64, found bool, to int64) bool {
		t.Helper()
		var moved bool
		if err := inTx(func(tx *sql.Tx) (err error) {
			moved, err = db.advanceOffset(ctx, tx, run, 2, from, found, to)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return moved
	}
	if !advance(0, false, 5) {
		t.Fatal("first stored offset not inserted")
	}
	if advance(0, false, 7) {
		t.Fatal("a second first insert succeeded: the compare-and-set let two owners start a partition")
	}
	if !advance(5, true, 9) || advance(5, true, 12) {
		t.Fatal("compare-and-set from the stored offset must succeed once and fail from a stale one")
	}
	stored, err := db.loadOffsets(ctx, run, []int32{1, 2})
	if err != nil || len(stored) != 1 || stored[2] != 9 {
		t.Fatalf("stored offsets %v (%v), want partition 2 at 9 only", stored, err)
	}

	if err := inTx(func(tx *sql.Tx) error {
		if err := db.rememberKeys(ctx, tx, run, 0, []string{"a", "b", "c"}, []int64{1, 2, 3}, 2); err != nil {
			return err
		}
		seen, err := db.seenKeys(ctx, tx, run, 0, []string{"a", "b", "c", "d"})
		if err != nil {
			return err
		}
		highest, err := db.highestKeyOffset(ctx, tx, run, 0)
		if err != nil {
			return err
		}
		if len(seen) != 2 || !seen["b"] || !seen["c"] || highest != 3 {
			return fmt.Errorf("window holds %v (highest %d), want b and c (a fell below floor 2), highest 3", seen, highest)
		}
		return db.insertOutput(ctx, tx, run, "w0", []outputRow{
			{producer: 1, seq: 8, sendTime: 100, partition: 1, offset: 4, windowFloor: -1},
			{producer: 0, seq: 3, sendTime: 101, partition: 0, offset: 7, windowFloor: 2},
			{producer: 1, seq: 2, sendTime: 102, partition: 1, offset: 5, windowFloor: -1},
		})
	}); err != nil {
		t.Fatal(err)
	}
	var read []outputRow
	if err := db.readOutput(ctx, run, func(row outputRow) { read = append(read, row) }); err != nil {
		t.Fatal(err)
	}
	want := []outputRow{{0, 3, 101, 0, 7, 2}, {1, 8, 100, 1, 4, -1}, {1, 2, 102, 1, 5, -1}}
	if fmt.Sprint(read) != fmt.Sprint(want) {
		t.Fatalf("rows %v, want %v (by partition, then insertion order)", read, want)
	}
	if err := db.deleteRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	if count, err := db.countOutput(ctx, run); err != nil || count != 0 {
		t.Fatalf("%d rows after deleteRun (%v)", count, err)
	}
}

// The seed's seek() road against a real group: offsets stored in the
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
	tx, err := db.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.advanceOffset(ctx, tx, topic, 0, 0, false, 60); err != nil {
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
		stored, err := db.loadOffsets(ctx, topic, []int32{0})
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
	if err := db.readOutput(ctx, topic, func(row outputRow) { offsets = append(offsets, row.offset) }); err != nil {
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
