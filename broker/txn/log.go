package txn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
)

// Log is the durable transaction log: a sequence of key/value records in
// which the latest value of a key wins and a nil value is a tombstone.
//
// Append returns only after the record is durable (as durable as the
// implementation makes anything); a nil error is what lets the
// coordinator acknowledge the state change. After an error the record may
// or may not have been written: the coordinator keeps its old state, and
// the next state it writes for the key supersedes the record either way.
// Load calls fn for every record in append order; the caller keeps the
// latest per key. Both may be called from several goroutines.
type Log interface {
	Append(ctx context.Context, key, value []byte) error
	Load(fn func(key, value []byte) error) error
}

// MemoryLog is an in-memory Log for tests: it keeps every record, can fail
// the next appends on demand, and can be reloaded by a new coordinator to
// simulate a restart.
type MemoryLog struct {
	// mu guards every field.
	mu      sync.Mutex
	records []memoryRecord
	// failures is how many of the next appends fail with failErr.
	failures int
	failErr  error
}

type memoryRecord struct{ key, value []byte }

// NewMemoryLog returns an empty MemoryLog.
func NewMemoryLog() *MemoryLog { return &MemoryLog{} }

// errInjected is the default error of FailAppends.
var errInjected = errors.New("injected append failure")

// FailAppends makes the next n appends fail with err (an injected error if
// err is nil) without writing anything.
func (l *MemoryLog) FailAppends(n int, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil {
		err = errInjected
	}
	l.failures, l.failErr = n, err
}

// Append records a copy of key and value.
func (l *MemoryLog) Append(ctx context.Context, key, value []byte) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory log append: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failures > 0 {
		l.failures--
		return fmt.Errorf("memory log append: %w", l.failErr)
	}
	var copied []byte
	if value != nil {
		copied = bytes.Clone(value)
		if copied == nil {
			copied = []byte{}
		}
	}
	l.records = append(l.records, memoryRecord{key: bytes.Clone(key), value: copied})
	return nil
}

// Load calls fn for every record in append order.
func (l *MemoryLog) Load(fn func(key, value []byte) error) error {
	l.mu.Lock()
	records := slices.Clone(l.records)
	l.mu.Unlock()
	for _, record := range records {
		if err := fn(record.key, record.value); err != nil {
			return err
		}
	}
	return nil
}

// Len is the number of records appended.
func (l *MemoryLog) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.records)
}

// Records returns copies of the records whose key is for transactionalID,
// decoded, in append order; a tombstone is a Metadata with State Dead and
// no producer id. For tests.
func (l *MemoryLog) Records(transactionalID string) ([]Metadata, error) {
	var out []Metadata
	err := l.Load(func(key, value []byte) error {
		id, err := decodeKey(key)
		if err != nil || id != transactionalID {
			return err
		}
		if value == nil {
			out = append(out, Metadata{TransactionalID: id, State: StateDead, ProducerID: noProducerID})
			return nil
		}
		m, err := decodeValue(id, value)
		out = append(out, m)
		return err
	})
	return out, err
}
