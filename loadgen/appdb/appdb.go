// Package appdb is the application database of the database consume
// stages (the application's road to exactly-once: a deduplicating
// consumer, offsets stored with the results): the consumer's own store,
// where its output rows, its partition offsets (the stored-offsets stage)
// and the keys it has seen (the dedup stage) live. One set of tables serves every run of an
// invocation; each row carries its run (the run's input topic), so a
// PostgreSQL database shared between invocations stays consistent.
//
//	exactly_output   one row per record the stage delivered; a plain table
//	                 (no unique key on producer/sequence: duplicates must
//	                 stay visible to the checker)
//	exactly_offsets  (run, partition_id) → next_offset, the position the
//	                 stored-offsets stage resumes from
//	exactly_dedup    (run, partition_id, record_key) → input_offset, the
//	                 dedup window of keys seen
//
// Two dialects, SQLite and PostgreSQL, share the SQL; differences
// (placeholders, the id column, row locks) are in sqlDialect. The stages
// that write here are package stages' DBStage
// ([github.com/exactly-eos/exactly/loadgen/stages.DBStage]); the runner
// reads the output table back for the checker.
package appdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	// The two database/sql drivers of the application-level modes.
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/exactly-eos/exactly/loadgen/errtext"
)

// Database kinds.
const (
	databaseSQLite   = "sqlite"
	databasePostgres = "postgres"
)

// sqlDialect isolates what differs between SQLite and PostgreSQL.
type sqlDialect struct {
	name string
	// idColumn declares the output table's insertion-ordered key.
	idColumn string
	// forUpdate locks the rows a SELECT reads until the transaction ends
	// (PostgreSQL; SQLite transactions here take the write lock at BEGIN).
	forUpdate string
	// numbered placeholders ($1, $2, …) instead of ?.
	numbered bool
}

var (
	sqliteDialect   = sqlDialect{name: databaseSQLite, idColumn: "INTEGER PRIMARY KEY"}
	postgresDialect = sqlDialect{name: databasePostgres, idColumn: "BIGSERIAL PRIMARY KEY", forUpdate: " FOR UPDATE", numbered: true}
)

// bind rewrites the ? placeholders of query for the dialect.
func (d sqlDialect) bind(query string) string {
	if !d.numbered {
		return query
	}
	var out strings.Builder
	next := 1
	for _, char := range query {
		if char == '?' {
			out.WriteString("$" + strconv.Itoa(next))
			next++
			continue
		}
		out.WriteRune(char)
	}
	return out.String()
}

// DB is an open application database. *sql.DB is safe for concurrent
// use; DB adds only immutable fields.
type DB struct {
	db       *sql.DB
	dialect  sqlDialect
	describe string // Describe's
	location string // for errors: the URL without its password, or the file
}

// IsPostgresURL reports whether a --db value names a PostgreSQL server.
func IsPostgresURL(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// connectTimeout bounds Open's first connection.
const connectTimeout = 10 * time.Second

// Open opens dsn: a postgres:// or postgresql:// URL, or an SQLite
// file path (optionally prefixed "sqlite:"), created if missing. It
// connects at once (bounded by connectTimeout), so a wrong URL or a
// server that is down fails before any run, with a one-line error that
// says what to fix and never shows the URL's password.
func Open(ctx context.Context, dsn string) (*DB, error) {
	if strings.TrimSpace(dsn) == "" {
		return nil, errors.New("application database: empty location")
	}
	var database *DB
	if IsPostgresURL(dsn) {
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			return nil, openError(dsn, "cannot use the URL", err)
		}
		db.SetMaxOpenConns(8)
		database = &DB{db: db, dialect: postgresDialect, location: RedactURL(dsn),
			describe: "postgres " + RedactURL(dsn) + " (synchronous_commit as the server sets it)"}
	} else {
		path := strings.TrimPrefix(dsn, "sqlite:")
		absolute, err := filepath.Abs(path)
		if err != nil {
			return nil, openError(dsn, "cannot resolve the path", err)
		}
		// WAL lets readers run beside the writer; synchronous=NORMAL in WAL
		// mode survives a process crash (the runner's SIGKILL), not power
		// loss, like a broker's page cache; BEGIN IMMEDIATE takes the write
		// lock at the start, so concurrent writers wait (busy_timeout)
		// instead of failing on a lock upgrade.
		query := url.Values{}
		query.Add("_pragma", "busy_timeout(20000)")
		query.Add("_pragma", "journal_mode(WAL)")
		query.Add("_pragma", "synchronous(NORMAL)")
		query.Set("_txlock", "immediate")
		db, err := sql.Open("sqlite", "file:"+absolute+"?"+query.Encode())
		if err != nil {
			return nil, openError(absolute, "cannot open", err)
		}
		db.SetMaxOpenConns(4)
		database = &DB{db: db, dialect: sqliteDialect, location: "sqlite " + absolute,
			describe: "sqlite " + absolute + " (modernc.org/sqlite, WAL, synchronous=NORMAL)"}
	}
	pingCtx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	if err := database.db.PingContext(pingCtx); err != nil {
		database.db.Close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("application database %s: %w", database.location, ctx.Err())
		}
		what := "cannot connect"
		if database.dialect.name == databaseSQLite {
			what = "cannot open"
		}
		return nil, openError(dsn, what, err)
	}
	return database, nil
}

// openError is the one-line error for an application database that
// cannot be used: its location without the password, what failed and a
// terse cause, and the fix.
func openError(dsn, what string, err error) error {
	if !IsPostgresURL(dsn) {
		path := strings.TrimPrefix(dsn, "sqlite:")
		return fmt.Errorf("application database sqlite %s: %s (%s); check that its directory exists and is writable",
			path, what, errtext.OneLine(err.Error()))
	}
	return fmt.Errorf("application database %s: %s (%s); check the URL and that PostgreSQL is running, or leave --db out to use a temporary SQLite file",
		RedactURL(dsn), what, postgresCause(dsn, err))
}

// postgresCause says in a few words why PostgreSQL at dsn failed with
// err: a network failure, the server's own message, or the driver's
// error folded onto one line, with the URL's password masked.
func postgresCause(dsn string, err error) string {
	if cause := errtext.NetworkCause(err); cause != "" {
		return cause
	}
	var pgErr *pgconn.PgError
	var cause string
	switch {
	case errors.As(err, &pgErr):
		cause = pgErr.Message + " (SQLSTATE " + pgErr.Code + ")"
	case errtext.IsTimeout(err):
		cause = fmt.Sprintf("no answer within %v", connectTimeout)
	default:
		cause = err.Error()
	}
	for _, secret := range urlSecrets(dsn) {
		cause = strings.ReplaceAll(cause, secret, "xxxxx")
	}
	return errtext.OneLine(cause)
}

// urlSecrets returns the passwords a database URL carries: its userinfo
// password and a password query parameter.
func urlSecrets(dsn string) []string {
	parsed, err := url.Parse(dsn)
	if err != nil {
		return nil
	}
	var secrets []string
	if password, ok := parsed.User.Password(); ok && password != "" {
		secrets = append(secrets, password)
	}
	if password := parsed.Query().Get("password"); password != "" {
		secrets = append(secrets, password)
	}
	return secrets
}

// RedactURL drops the password from a database URL: the userinfo's, and
// a password query parameter's value.
func RedactURL(dsn string) string {
	parsed, err := url.Parse(dsn)
	if err != nil {
		return "(unparsable URL)"
	}
	if parsed.User != nil {
		parsed.User = url.User(parsed.User.Username())
	}
	if query := parsed.Query(); query.Has("password") {
		query.Set("password", "xxxxx")
		parsed.RawQuery = query.Encode()
	}
	return parsed.String()
}

// Describe says what the database is, for results: its kind and
// location, without credentials.
func (a *DB) Describe() string { return a.describe }

// Begin starts a transaction (SQLite's takes the write lock at once).
func (a *DB) Begin(ctx context.Context) (*sql.Tx, error) { return a.db.BeginTx(ctx, nil) }

// Close closes the connection pool.
func (a *DB) Close() error { return a.db.Close() }

// CreateSchema creates the tables if missing. The runner calls it once per
// invocation, before any stage starts (concurrent CREATE TABLE IF NOT
// EXISTS can fail on PostgreSQL).
func (a *DB) CreateSchema(ctx context.Context) error {
	statements := []string{
		`CREATE TABLE IF NOT EXISTS exactly_output (
			id ` + a.dialect.idColumn + `,
			run TEXT NOT NULL,
			producer BIGINT NOT NULL,
			seq BIGINT NOT NULL,
			send_time BIGINT NOT NULL,
			input_partition INTEGER NOT NULL,
			input_offset BIGINT NOT NULL,
			window_floor BIGINT NOT NULL,
			worker TEXT NOT NULL)`,
		`CREATE INDEX IF NOT EXISTS exactly_output_run ON exactly_output (run, input_partition, id)`,
		`CREATE TABLE IF NOT EXISTS exactly_offsets (
			run TEXT NOT NULL,
			partition_id INTEGER NOT NULL,
			next_offset BIGINT NOT NULL,
			PRIMARY KEY (run, partition_id))`,
		`CREATE TABLE IF NOT EXISTS exactly_dedup (
			run TEXT NOT NULL,
			partition_id INTEGER NOT NULL,
			record_key TEXT NOT NULL,
			input_offset BIGINT NOT NULL,
			PRIMARY KEY (run, partition_id, record_key))`,
		`CREATE INDEX IF NOT EXISTS exactly_dedup_offset ON exactly_dedup (run, partition_id, input_offset)`,
	}
	for _, statement := range statements {
		if _, err := a.db.ExecContext(ctx, statement); err != nil {
			if a.dialect.name == databasePostgres {
				return fmt.Errorf("application database %s: cannot create its tables (%s); the user needs CREATE on the database's schema",
					a.location, postgresCause("", err))
			}
			return fmt.Errorf("application database %s: cannot create its tables (%s); check that the file is an SQLite database this user can write",
				a.location, errtext.OneLine(err.Error()))
		}
	}
	return nil
}

// DeleteRun removes a run's rows once verified, so a shared database is
// left as it was found.
func (a *DB) DeleteRun(ctx context.Context, run string) error {
	for _, table := range []string{"exactly_output", "exactly_offsets", "exactly_dedup"} {
		if _, err := a.db.ExecContext(ctx, a.dialect.bind("DELETE FROM "+table+" WHERE run = ?"), run); err != nil {
			return fmt.Errorf("delete run %s from %s: %w", run, table, err)
		}
	}
	return nil
}

// Row is one row of exactly_output: the input record it came from (its
// loadgen header's producer, sequence and send time, and its input
// partition and offset).
type Row struct {
	Producer  uint32
	Seq       uint64
	SendTime  int64
	Partition int32
	Offset    int64
	// WindowFloor is, for the dedup stage, the lowest input offset whose
	// key the window still held when this row was written (-1: no
	// window).
	WindowFloor int64
}

// insertRowsChunk bounds the rows of one multi-row INSERT (8 parameters
// each: within SQLite's and PostgreSQL's parameter limits).
const insertRowsChunk = 400

// InsertOutput appends rows to exactly_output in tx.
func (a *DB) InsertOutput(ctx context.Context, tx *sql.Tx, run, worker string, rows []Row) error {
	for start := 0; start < len(rows); start += insertRowsChunk {
		chunk := rows[start:min(start+insertRowsChunk, len(rows))]
		var query strings.Builder
		query.WriteString("INSERT INTO exactly_output (run, producer, seq, send_time, input_partition, input_offset, window_floor, worker) VALUES ")
		args := make([]any, 0, len(chunk)*8)
		for i, row := range chunk {
			if i > 0 {
				query.WriteString(", ")
			}
			query.WriteString("(?, ?, ?, ?, ?, ?, ?, ?)")
			args = append(args, run, int64(row.Producer), int64(row.Seq), row.SendTime, row.Partition, row.Offset, row.WindowFloor, worker)
		}
		if _, err := tx.ExecContext(ctx, a.dialect.bind(query.String()), args...); err != nil {
			return fmt.Errorf("insert %d output rows: %w", len(chunk), err)
		}
	}
	return nil
}

// StoredOffset reads a partition's stored next offset in tx, locking its
// row on PostgreSQL until tx ends.
func (a *DB) StoredOffset(ctx context.Context, tx *sql.Tx, run string, partition int32) (offset int64, found bool, err error) {
	query := a.dialect.bind("SELECT next_offset FROM exactly_offsets WHERE run = ? AND partition_id = ?" + a.dialect.forUpdate)
	err = tx.QueryRowContext(ctx, query, run, partition).Scan(&offset)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return 0, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("read stored offset of partition %d: %w", partition, err)
	}
	return offset, true, nil
}

// AdvanceOffset moves a partition's stored offset from `from` (found:
// whether a row existed) to `to`, as a compare-and-set: it reports false
// when another transaction changed the row first.
func (a *DB) AdvanceOffset(ctx context.Context, tx *sql.Tx, run string, partition int32, from int64, found bool, to int64) (bool, error) {
	var result sql.Result
	var err error
	if found {
		result, err = tx.ExecContext(ctx, a.dialect.bind(
			"UPDATE exactly_offsets SET next_offset = ? WHERE run = ? AND partition_id = ? AND next_offset = ?"), to, run, partition, from)
	} else {
		result, err = tx.ExecContext(ctx, a.dialect.bind(
			"INSERT INTO exactly_offsets (run, partition_id, next_offset) VALUES (?, ?, ?) ON CONFLICT (run, partition_id) DO NOTHING"), run, partition, to)
	}
	if err != nil {
		return false, fmt.Errorf("store offset %d of partition %d: %w", to, partition, err)
	}
	affected, err := result.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("store offset of partition %d: rows affected: %w", partition, err)
	}
	return affected == 1, nil
}

// LoadOffsets returns the stored next offsets of the given partitions
// (partitions without a row are absent).
func (a *DB) LoadOffsets(ctx context.Context, run string, partitions []int32) (map[int32]int64, error) {
	offsets := make(map[int32]int64, len(partitions))
	for _, partition := range partitions {
		var offset int64
		err := a.db.QueryRowContext(ctx, a.dialect.bind("SELECT next_offset FROM exactly_offsets WHERE run = ? AND partition_id = ?"),
			run, partition).Scan(&offset)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			continue
		case err != nil:
			return nil, fmt.Errorf("load stored offset of partition %d: %w", partition, err)
		}
		offsets[partition] = offset
	}
	return offsets, nil
}

// HighestKeyOffset returns the highest input offset of a key the dedup
// window of a partition holds, or -1 when it holds none.
func (a *DB) HighestKeyOffset(ctx context.Context, tx *sql.Tx, run string, partition int32) (int64, error) {
	var highest sql.NullInt64
	err := tx.QueryRowContext(ctx, a.dialect.bind("SELECT MAX(input_offset) FROM exactly_dedup WHERE run = ? AND partition_id = ?"),
		run, partition).Scan(&highest)
	if err != nil {
		return 0, fmt.Errorf("read the dedup window of partition %d: %w", partition, err)
	}
	if !highest.Valid {
		return -1, nil
	}
	return highest.Int64, nil
}

// SeenKeys returns which of keys the dedup window of a partition holds.
func (a *DB) SeenKeys(ctx context.Context, tx *sql.Tx, run string, partition int32, keys []string) (map[string]bool, error) {
	seen := make(map[string]bool)
	for start := 0; start < len(keys); start += insertRowsChunk {
		chunk := keys[start:min(start+insertRowsChunk, len(keys))]
		query := "SELECT record_key FROM exactly_dedup WHERE run = ? AND partition_id = ? AND record_key IN (?" +
			strings.Repeat(", ?", len(chunk)-1) + ")"
		args := []any{run, partition}
		for _, key := range chunk {
			args = append(args, key)
		}
		rows, err := tx.QueryContext(ctx, a.dialect.bind(query), args...)
		if err != nil {
			return nil, fmt.Errorf("look up %d keys of partition %d: %w", len(chunk), partition, err)
		}
		for rows.Next() {
			var key string
			if err := rows.Scan(&key); err != nil {
				rows.Close()
				return nil, fmt.Errorf("look up keys of partition %d: %w", partition, err)
			}
			seen[key] = true
		}
		if err := rows.Close(); err != nil {
			return nil, fmt.Errorf("look up keys of partition %d: %w", partition, err)
		}
	}
	return seen, nil
}

// RememberKeys adds keys (with their input offsets) to a partition's
// window and forgets those below floor.
func (a *DB) RememberKeys(ctx context.Context, tx *sql.Tx, run string, partition int32, keys []string, offsets []int64, floor int64) error {
	for start := 0; start < len(keys); start += insertRowsChunk {
		end := min(start+insertRowsChunk, len(keys))
		var query strings.Builder
		query.WriteString("INSERT INTO exactly_dedup (run, partition_id, record_key, input_offset) VALUES ")
		args := make([]any, 0, (end-start)*4)
		for i := start; i < end; i++ {
			if i > start {
				query.WriteString(", ")
			}
			query.WriteString("(?, ?, ?, ?)")
			args = append(args, run, partition, keys[i], offsets[i])
		}
		if _, err := tx.ExecContext(ctx, a.dialect.bind(query.String()), args...); err != nil {
			return fmt.Errorf("remember %d keys of partition %d: %w", end-start, partition, err)
		}
	}
	if _, err := tx.ExecContext(ctx, a.dialect.bind("DELETE FROM exactly_dedup WHERE run = ? AND partition_id = ? AND input_offset < ?"),
		run, partition, floor); err != nil {
		return fmt.Errorf("forget keys of partition %d below offset %d: %w", partition, floor, err)
	}
	return nil
}

// CountOutput counts a run's output rows.
func (a *DB) CountOutput(ctx context.Context, run string) (int64, error) {
	var count int64
	if err := a.db.QueryRowContext(ctx, a.dialect.bind("SELECT COUNT(*) FROM exactly_output WHERE run = ?"), run).Scan(&count); err != nil {
		return 0, fmt.Errorf("count output rows of %s: %w", run, err)
	}
	return count, nil
}

// ReadOutput feeds every output row of run to observe, partition by
// partition in insertion order.
func (a *DB) ReadOutput(ctx context.Context, run string, observe func(Row)) error {
	rows, err := a.db.QueryContext(ctx, a.dialect.bind(
		"SELECT producer, seq, send_time, input_partition, input_offset, window_floor FROM exactly_output WHERE run = ? ORDER BY input_partition, id"), run)
	if err != nil {
		return fmt.Errorf("read output rows of %s: %w", run, err)
	}
	defer rows.Close()
	for rows.Next() {
		var row Row
		var producer, seq int64
		if err := rows.Scan(&producer, &seq, &row.SendTime, &row.Partition, &row.Offset, &row.WindowFloor); err != nil {
			return fmt.Errorf("read output rows of %s: %w", run, err)
		}
		if producer < 0 || producer > int64(^uint32(0)) || seq < 0 {
			return fmt.Errorf("read output rows of %s: producer %d sequence %d out of range", run, producer, seq)
		}
		row.Producer, row.Seq = uint32(producer), uint64(seq)
		observe(row)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read output rows of %s: %w", run, err)
	}
	return nil
}
