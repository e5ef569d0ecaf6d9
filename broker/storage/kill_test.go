package storage

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// crashChildEnv names the directory a re-executed test binary appends to
// as the crash child (see TestMain).
const crashChildEnv = "EXACTLY_STORAGE_CRASH_CHILD"

// crashChildOptions are the options of the child and of the parent's checks.
var crashChildOptions = Options{SegmentBytes: 4 << 20, IndexIntervalBytes: 1024, Fsync: FsyncPolicy{Mode: FsyncAlways}}

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		if err := runCrashChild(dir); err != nil {
			fmt.Fprintln(os.Stderr, "crash child:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runCrashChild appends batches from two goroutines until killed, printing
// "ack <first> <last> <seq>" once each batch is durable (fsync always). One
// writer appends single small batches, the other runs of up to 1 MiB in one
// call: a SIGKILL can cut a write that large between pages, leaving a torn tail.
func runCrashChild(dir string) error {
	l, _, err := Open(dir, crashChildOptions)
	if err != nil {
		return err
	}
	var output sync.Mutex
	var group sync.WaitGroup
	errs := make(chan error, 2)
	for writer := range 2 {
		group.Go(func() {
			random := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(writer)))
			for {
				run, acks, err := childBatches(random, writer == 1)
				if err != nil {
					errs <- err
					return
				}
				result, err := l.Append(run)
				if err == nil {
					err = l.WaitDurable(context.Background(), result.LastOffset)
				}
				if err != nil {
					errs <- err
					return
				}
				output.Lock()
				for _, ack := range acks {
					offset := result.FirstOffset + ack.first
					fmt.Fprintf(os.Stdout, "ack %d %d %d\n", offset, offset+ack.last-ack.first, ack.seq)
				}
				output.Unlock()
			}
		})
	}
	group.Wait()
	return <-errs
}

// childBatches builds one batch, or with large a run of up to 64 batches of
// about 16 KiB; the acknowledgements' offsets are relative to the run's first.
func childBatches(random *rand.Rand, large bool) ([]byte, []acknowledged, error) {
	count, valueSize := 1, random.IntN(2000)
	if large {
		count, valueSize = 1+random.IntN(64), 2000
	}
	var run []byte
	var acks []acknowledged
	next := int64(0)
	for range count {
		seq, records := random.Int32(), 1+random.IntN(8)
		batch, err := buildTestBatch(seq, records, valueSize, time.Now().UnixMilli())
		if err != nil {
			return nil, nil, err
		}
		run = append(run, batch...)
		acks = append(acks, acknowledged{first: next, last: next + int64(records) - 1, seq: seq})
		next += int64(records)
	}
	return run, acks, nil
}

// acknowledged is a batch the child reported durable.
type acknowledged struct {
	first, last int64
	seq         int32
}

// TestKilledProcessLosesNoAcknowledgedBatch kills a child process that
// appends with fsync=always at random points and checks, after each
// recovery, that every acknowledged batch is present and intact and that
// nothing corrupt is served.
func TestKilledProcessLosesNoAcknowledgedBatch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	random := rand.New(rand.NewPCG(51, 52))
	var acks []acknowledged
	truncations := 0
	for iteration := range 50 {
		delay := time.Duration(random.IntN(3000)) * time.Microsecond
		newAcks := runAndKillChild(t, dir, 1+random.IntN(12), delay)
		acks = append(acks, newAcks...)
		l, report, err := Open(dir, crashChildOptions)
		if err != nil {
			t.Fatalf("iteration %d: open after kill: %v", iteration, err)
		}
		if report.CleanShutdown {
			t.Fatalf("iteration %d: a killed child left a clean-shutdown marker", iteration)
		}
		if report.TruncatedAt >= 0 {
			truncations++
		}
		stored := readAll(t, l) // every served batch intact and contiguous
		byBase := map[int64]storedBatch{}
		for _, b := range stored {
			byBase[b.base] = b
		}
		for _, ack := range acks {
			b, ok := byBase[ack.first]
			if !ok || b.last != ack.last || b.seq != ack.seq {
				t.Fatalf("iteration %d: acknowledged batch %+v missing or different (found %+v, report %+v)", iteration, ack, b, report)
			}
		}
		if iteration%2 == 0 {
			l.abandon() // the next child recovers too
		} else if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if len(acks) < 50 {
		t.Fatalf("only %d acknowledged batches over 50 kills", len(acks))
	}
	t.Logf("%d acknowledged batches checked; %d recoveries truncated a torn tail", len(acks), truncations)
}

// runAndKillChild starts the child, SIGKILLs it `delay` after it
// acknowledged `kill` batches (a random point of its append loop), and
// returns every acknowledgement it printed.
func runAndKillChild(t *testing.T, dir string, kill int, delay time.Duration) []acknowledged {
	t.Helper()
	command := exec.Command(os.Args[0], "-test.run=^$")
	command.Env = append(os.Environ(), crashChildEnv+"="+dir)
	command.Stderr = os.Stderr
	stdout, err := command.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := command.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan acknowledged)
	go func() {
		defer close(lines)
		scanner := bufio.NewScanner(stdout)
		for scanner.Scan() {
			var ack acknowledged
			if _, err := fmt.Sscanf(scanner.Text(), "ack %d %d %d", &ack.first, &ack.last, &ack.seq); err == nil {
				lines <- ack
			}
		}
	}()
	var acks []acknowledged
	deadline := time.After(20 * time.Second)
	for len(acks) < kill {
		select {
		case ack, ok := <-lines:
			if !ok {
				t.Fatalf("child exited after %d acknowledgements: %v", len(acks), command.Wait())
			}
			acks = append(acks, ack)
		case <-deadline:
			command.Process.Kill()
			t.Fatalf("child acknowledged only %d batches in 20s", len(acks))
		}
	}
	killed := make(chan error, 1)
	time.AfterFunc(delay, func() { killed <- command.Process.Kill() })
	for ack := range lines { // until the kill closes stdout // acknowledgements printed before the kill
		acks = append(acks, ack)
	}
	if err := <-killed; err != nil {
		t.Fatal(err)
	}
	command.Wait()
	return acks
}
