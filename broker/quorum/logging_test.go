package quorum

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer safe for raft's and the test's goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A single-voter quorum elects itself, and raft's hclog lines arrive in the
// configured slog logger with their level.
func TestSingleVoterLogsThroughSlog(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 20*time.Second)
	var out lockedBuffer
	timing := testTiming
	timing.Logger = slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := newTestCluster(t, 1, timing)
	c.startAll()
	c.controller(ctx)
	if _, err := c.nodes[1].RegisterBroker(ctx, BrokerRegistration{ID: 1, Host: "127.0.0.1", Port: 9001}); err != nil {
		t.Fatal(err)
	}
	logs := out.String()
	if !strings.Contains(logs, "component=raft") || !strings.Contains(logs, "level=INFO") || !strings.Contains(logs, "entering leader state") {
		t.Fatalf("raft's logs did not reach slog:\n%s", logs)
	}
	if strings.Contains(logs, "msg=\"[INFO]") {
		t.Fatalf("hclog level prefix not parsed:\n%s", logs)
	}
}
