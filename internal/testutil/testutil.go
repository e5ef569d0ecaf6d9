// Package testutil holds the helpers the tests of every package share:
// waiting, bounded, for a condition to hold, and free loopback addresses
// for servers that start later. It is imported by tests only.
package testutil

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/internal/loopback"
)

// PollInterval is how often Eventually, Until and UntilContext ask their
// condition again. Conditions that are expensive to ask (a request to a
// broker) are still asked at most once per interval: a slow answer delays
// the next question instead of queueing them.
const PollInterval = 10 * time.Millisecond

// Eventually asks cond until it answers true or timeout passes; then it
// fails t with what, the timeout and cond's last explanation. cond is asked
// at least once, even with a timeout already past.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if detail, ok := poll(ctx, cond); !ok {
		t.Fatalf("%s: not reached within %v: %s", what, timeout, detail)
	}
}

// Until is Eventually for a condition with nothing to explain.
func Until(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if _, ok := poll(ctx, func() (bool, string) { return cond(), "" }); !ok {
		t.Fatalf("%s: not reached within %v", what, timeout)
	}
}

// UntilContext asks cond until it answers true or ctx ends (a deadline
// that several waits of one test share); then it fails t with what.
func UntilContext(t testing.TB, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	if _, ok := poll(ctx, func() (bool, string) { return cond(), "" }); !ok {
		t.Fatalf("%s: not reached before the test's deadline (%v)", what, context.Cause(ctx))
	}
}

// poll asks cond every PollInterval until it holds (true) or ctx ends
// (false, with cond's last explanation).
func poll(ctx context.Context, cond func() (bool, string)) (string, bool) {
	ticker := time.NewTicker(PollInterval)
	defer ticker.Stop()
	for {
		ok, detail := cond()
		if ok {
			return detail, true
		}
		select {
		case <-ctx.Done():
			return detail, false
		case <-ticker.C:
		}
	}
}

// FreeAddr returns a loopback host:port nothing listens on, on this test
// process's own loopback IP where no other process binds (see
// internal/loopback), and never handed out before in this process.
func FreeAddr(t testing.TB) string {
	t.Helper()
	addr, err := loopback.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// FreeAddrs returns n distinct addresses from FreeAddr.
func FreeAddrs(t testing.TB, n int) []string {
	t.Helper()
	addrs, err := loopback.FreeAddrs(n)
	if err != nil {
		t.Fatal(err)
	}
	return addrs
}

// SyncBuffer collects what a child process writes (exec.Cmd's copying
// goroutine) so that the test may read it while the process still runs.
type SyncBuffer struct {
	mu     sync.Mutex // guards buffer
	buffer bytes.Buffer
}

// Write appends p.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buffer.Write(p)
}

// String returns what was written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buffer.String()
}
