package testutil

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeTB records how a helper failed without failing this test. Fatalf
// ends the helper's goroutine as testing.T's does, so the helpers are run
// on a goroutine of their own (run).
type fakeTB struct {
	testing.TB
	mu      sync.Mutex
	message string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.message = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}
func (f *fakeTB) Fatal(args ...any) { f.Fatalf("%s", fmt.Sprint(args...)) }

// run calls helper with a fakeTB and returns its failure message ("" if
// it returned normally).
func run(helper func(testing.TB)) string {
	f := &fakeTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		helper(f)
	}()
	<-done
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.message
}

func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	t.Parallel()
	asked := 0
	message := run(func(tb testing.TB) {
		Eventually(tb, 10*time.Second, "three questions", func() (bool, string) {
			asked++
			return asked == 3, fmt.Sprintf("asked %d", asked)
		})
	})
	if message != "" || asked != 3 {
		t.Fatalf("failed with %q after %d questions, want success after 3", message, asked)
	}
}

func TestEventuallyFailsWithTheLastDetail(t *testing.T) {
	t.Parallel()
	asked := 0
	start := time.Now()
	message := run(func(tb testing.TB) {
		Eventually(tb, 50*time.Millisecond, "never", func() (bool, string) {
			asked++
			return false, fmt.Sprintf("asked %d", asked)
		})
	})
	if took := time.Since(start); took < 50*time.Millisecond || took > 5*time.Second {
		t.Fatalf("gave up after %v, want about 50ms", took)
	}
	want := fmt.Sprintf("never: not reached within 50ms: asked %d", asked)
	if message != want || asked < 2 {
		t.Fatalf("failure %q after %d questions, want %q", message, asked, want)
	}
}

func TestUntilAsksAtLeastOnce(t *testing.T) {
	t.Parallel()
	if message := run(func(tb testing.TB) { Until(tb, 0, "already true", func() bool { return true }) }); message != "" {
		t.Fatalf("a condition already true failed: %q", message)
	}
	message := run(func(tb testing.TB) { Until(tb, 20*time.Millisecond, "false", func() bool { return false }) })
	if message != "false: not reached within 20ms" {
		t.Fatalf("failure %q", message)
	}
}

func TestUntilContextEndsWithTheContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	message := run(func(tb testing.TB) { UntilContext(tb, ctx, "cancelled", func() bool { return false }) })
	if !strings.HasPrefix(message, "cancelled: not reached before the test's deadline") {
		t.Fatalf("failure %q", message)
	}
}

func TestFreeAddrsAreDistinctAndBindable(t *testing.T) {
	t.Parallel()
	addrs := FreeAddrs(t, 20)
	seen := map[string]bool{FreeAddr(t): true}
	for _, addr := range addrs {
		if seen[addr] {
			t.Fatalf("%s handed out twice", addr)
		}
		seen[addr] = true
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("bind %s: %v", addr, err)
		}
		ln.Close()
	}
}
