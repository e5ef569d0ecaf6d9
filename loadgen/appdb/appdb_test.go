package appdb

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

	"github.com/exactly-eos/exactly/internal/testenv"
)

func openTestSQLite(t *testing.T) *DB {
	t.Helper()
	db, err := Open(t.Context(), filepath.Join(t.TempDir(), "app.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.CreateSchema(t.Context()); err != nil {
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
	db, err := Open(t.Context(), url)
	if err != nil {
		testenv.Missing(t, "PostgreSQL at "+RedactURL(url), err.Error())
		return ""
	}
	db.Close()
	return url
}

// A PostgreSQL URL where nothing listens fails at open, in one line that
// names the cause and the fix and shows neither password of the URL.
func TestOpenPostgresErrorIsOneLineWithoutPassword(t *testing.T) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	address := listener.Addr().String()
	listener.Close()
	dsn := "postgres://nobody:secret@" + address + "/x?sslmode=disable&password=hunter2"
	db, err := Open(t.Context(), dsn)
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
	db, err := Open(t.Context(), postgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.CreateSchema(t.Context()); err != nil {
		t.Fatal(err)
	}
	testApplicationStore(t, db)
}

// testApplicationStore checks the store operations both dialects share:
// schema creation is idempotent, offsets move only by compare-and-set,
// the dedup window forgets keys below its floor, rows read back in
// insertion order per partition, and a run's rows can be deleted.
func testApplicationStore(t *testing.T, db *DB) {
	ctx := t.Context()
	if err := db.CreateSchema(ctx); err != nil {
		t.Fatalf("second createSchema: %v", err)
	}
	run := fmt.Sprintf("test-run-%016x", rand.Uint64())
	t.Cleanup(func() { _ = db.DeleteRun(context.Background(), run) })
	inTx := func(body func(tx *sql.Tx) error) error {
		tx, err := db.Begin(ctx)
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
			moved, err = db.AdvanceOffset(ctx, tx, run, 2, from, found, to)
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
	stored, err := db.LoadOffsets(ctx, run, []int32{1, 2})
	if err != nil || len(stored) != 1 || stored[2] != 9 {
		t.Fatalf("stored offsets %v (%v), want partition 2 at 9 only", stored, err)
	}

	if err := inTx(func(tx *sql.Tx) error {
		if err := db.RememberKeys(ctx, tx, run, 0, []string{"a", "b", "c"}, []int64{1, 2, 3}, 2); err != nil {
			return err
		}
		seen, err := db.SeenKeys(ctx, tx, run, 0, []string{"a", "b", "c", "d"})
		if err != nil {
			return err
		}
		highest, err := db.HighestKeyOffset(ctx, tx, run, 0)
		if err != nil {
			return err
		}
		if len(seen) != 2 || !seen["b"] || !seen["c"] || highest != 3 {
			return fmt.Errorf("window holds %v (highest %d), want b and c (a fell below floor 2), highest 3", seen, highest)
		}
		return db.InsertOutput(ctx, tx, run, "w0", []Row{
			{Producer: 1, Seq: 8, SendTime: 100, Partition: 1, Offset: 4, WindowFloor: -1},
			{Producer: 0, Seq: 3, SendTime: 101, Partition: 0, Offset: 7, WindowFloor: 2},
			{Producer: 1, Seq: 2, SendTime: 102, Partition: 1, Offset: 5, WindowFloor: -1},
		})
	}); err != nil {
		t.Fatal(err)
	}
	var read []Row
	if err := db.ReadOutput(ctx, run, func(row Row) { read = append(read, row) }); err != nil {
		t.Fatal(err)
	}
	want := []Row{{0, 3, 101, 0, 7, 2}, {1, 8, 100, 1, 4, -1}, {1, 2, 102, 1, 5, -1}}
	if fmt.Sprint(read) != fmt.Sprint(want) {
		t.Fatalf("rows %v, want %v (by partition, then insertion order)", read, want)
	}
	if err := db.DeleteRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	if count, err := db.CountOutput(ctx, run); err != nil || count != 0 {
		t.Fatalf("%d rows after deleteRun (%v)", count, err)
	}
}
