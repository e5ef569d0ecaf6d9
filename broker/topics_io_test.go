package broker

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/broker/storage"
)

// gatedFS is the OS file system, except that renames onto a file whose
// name ends with suffix (topics.json if empty) first report themselves
// on reached and wait for the gate, or fail with storage.ErrInjected
// while fail is set.
type gatedFS struct {
	storage.OSFS
	suffix  string
	mu      sync.Mutex
	gate    chan struct{} // nil: renames pass
	reached chan struct{}
	fail    bool
}

func (f *gatedFS) Rename(oldName, newName string) error {
	suffix := f.suffix
	if suffix == "" {
		suffix = string(filepath.Separator) + topicsFile
	}
	if strings.HasSuffix(newName, suffix) {
		f.mu.Lock()
		gate, reached, fail := f.gate, f.reached, f.fail
		f.mu.Unlock()
		if fail {
			return storage.ErrInjected
		}
		if gate != nil {
			reached <- struct{}{}
			<-gate
		}
	}
	return f.OSFS.Rename(oldName, newName)
}

// closeGate makes matching renames wait from now on and returns the
// function that lets them (and later ones) pass; it also runs when the
// test ends, before the broker closes, so a failing test does not hang.
func (f *gatedFS) closeGate(t *testing.T) (release func()) {
	gate := make(chan struct{})
	f.mu.Lock()
	f.gate, f.reached = gate, make(chan struct{}, 1)
	f.mu.Unlock()
	var once sync.Once
	release = func() {
		once.Do(func() {
			f.mu.Lock()
			f.gate = nil
			f.mu.Unlock()
			close(gate)
		})
	}
	t.Cleanup(release)
	return release
}

func startBrokerWithFS(t *testing.T, fsys storage.FS) *Broker {
	t.Helper()
	b, err := Start(context.Background(), Config{NodeID: 1, Listen: "127.0.0.1:0", DataDir: t.TempDir(), fs: fsys})
	if err != nil {
		t.Fatalf("start broker: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// withinSeconds runs f and fails the test at once if it does not return
// in time (f's goroutine is left to the test's cleanups).
func withinSeconds(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not return while a file was being renamed into place", what)
	}
}

// While a topic's creation is writing topics.json, lookups of other
// topics (and metadata changes' readers) do not wait for it; a second
// create of the same name waits and then finds the topic exists; the new
// topic is visible only once its file is written.
func TestCreateTopicDoesNotBlockLookups(t *testing.T) {
	t.Parallel()
	fsys := &gatedFS{}
	b := startBrokerWithFS(t, fsys)
	existing, err := b.createTopicWithID("existing", newRandomID(), 1, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	release := fsys.closeGate(t)
	first := make(chan error, 1)
	go func() { _, err := b.createTopicWithID("new", newRandomID(), 2, nil, false); first <- err }()
	<-fsys.reached // the creation holds the name and writes topics.json now
	withinSeconds(t, "topicByName", func() {
		if b.topicByName("existing") != existing {
			t.Error("lookup of an existing topic failed")
		}
		if b.topicByName("new") != nil {
			t.Error("the new topic is visible before topics.json names it")
		}
		if len(b.sortedTopics()) != 1 || len(b.partitionsOf(existing)) != 1 {
			t.Error("topic list changed before the creation was published")
		}
	})
	second := make(chan error, 1)
	go func() { _, err := b.createTopicWithID("new", newRandomID(), 2, nil, false); second <- err }()
	select {
	case err := <-second:
		t.Fatalf("a concurrent create of the same name returned before the first finished: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	release()
	if err := <-first; err != nil {
		t.Fatalf("first create: %v", err)
	}
	if err := <-second; !errors.Is(err, errTopicExists) {
		t.Fatalf("second create of the same name: %v, want errTopicExists", err)
	}
	if created := b.topicByName("new"); created == nil || len(b.partitionsOf(created)) != 2 {
		t.Fatal("the new topic is not published with its two partitions")
	}
}

// A failed rename of topics.json reports the error, leaves the file as
// it was, and publishes nothing: a created topic does not appear, altered
// configs are rolled back; the next change succeeds.
func TestTopicsFileRenameFailureKeepsOldFile(t *testing.T) {
	fsys := &gatedFS{}
	b := startBrokerWithFS(t, fsys)
	kept, err := b.createTopicWithID("kept", newRandomID(), 1, map[string]string{"retention.ms": "60000"}, false)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(b.dataDir, topicsFile)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fsys.mu.Lock()
	fsys.fail = true
	fsys.mu.Unlock()
	if _, err := b.createTopicWithID("lost", newRandomID(), 1, nil, false); !errors.Is(err, storage.ErrInjected) {
		t.Fatalf("create with a failing rename: %v, want the injected fault", err)
	}
	if b.topicByName("lost") != nil {
		t.Fatal("a topic whose topics.json write failed was published")
	}
	if _, err := os.Stat(filepath.Join(b.dataDir, partitionDirName("lost", 0))); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the failed topic's partition directory is left: %v", err)
	}
	if err := b.setTopicConfigs(kept, map[string]string{"retention.ms": "1000"}); !errors.Is(err, storage.ErrInjected) {
		t.Fatalf("alter configs with a failing rename: %v, want the injected fault", err)
	}
	if got := kept.config.Load().overrides["retention.ms"]; got != "60000" {
		t.Fatalf("retention.ms is %q after the failed alter, want it rolled back to 60000", got)
	}
	if after, err := os.ReadFile(path); err != nil || !bytes.Equal(after, before) {
		t.Fatalf("topics.json changed by failed writes (%v):\n%s\nwas\n%s", err, after, before)
	}
	if _, err := os.Stat(path + ".tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("temporary file left behind: %v", err)
	}
	fsys.mu.Lock()
	fsys.fail = false
	fsys.mu.Unlock()
	if _, err := b.createTopicWithID("lost", newRandomID(), 1, nil, false); err != nil {
		t.Fatalf("create after the fault cleared: %v", err)
	}
}
