package conformance_test

// The librdkafka end-to-end test: the `exactly` binary runs as a
// subprocess and kcat (librdkafka) produces to it, consumes from it and
// reads its metadata, with every codec librdkafka speaks. ci/test.sh
// installs kcat; without it the test skips outside CI and fails in CI.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/internal/testutil"
)

// kcatCodecs are the compression codecs kcat produces with, one per
// partition of the codecs topic.
var kcatCodecs = []string{"none", "gzip", "snappy", "lz4", "zstd"}

const (
	kcatRecordsPerPartition = 400
	kcatAutoRecords         = 600
	kcatAutoKeys            = 20
	kcatAutoPartitions      = 3
)

func TestKcatEndToEnd(t *testing.T) {
	t.Parallel()
	kcat := requireKcat(t)
	binary := buildExactly(t)
	dataDir := t.TempDir()
	brokerArgs := []string{"--data-dir", dataDir, "--config", "num.partitions=" + strconv.Itoa(kcatAutoPartitions)}

	server := startExactly(t, binary, brokerArgs...)
	createTopic(t, server.addr, "kcat-codecs", int32(len(kcatCodecs)))

	// One partition per codec; each partition's records must come back
	// in order, whole, with their keys and headers.
	for partition, codec := range kcatCodecs {
		input := codecRecords(partition)
		runKcat(t, kcat, input, "-b", server.addr, "-P", "-t", "kcat-codecs",
			"-p", strconv.Itoa(partition), "-K", ":", "-z", codec, "-H", "codec="+codec)
	}
	checkCodecTopic(t, consumeWithKcat(t, kcat, server.addr, "kcat-codecs"))

	// A topic kcat's producer creates by naming it: num.partitions
	// partitions, librdkafka's key hash picks one per key.
	var input strings.Builder
	for i := range kcatAutoRecords {
		fmt.Fprintf(&input, "key-%d:auto-%d\n", i%kcatAutoKeys, i)
	}
	runKcat(t, kcat, input.String(), "-b", server.addr, "-P", "-t", "kcat-auto", "-K", ":")
	checkAutoTopic(t, consumeWithKcat(t, kcat, server.addr, "kcat-auto"))

	checkKcatMetadata(t, kcat, server.addr, map[string]int{
		"kcat-codecs": len(kcatCodecs),
		"kcat-auto":   kcatAutoPartitions,
	})

	server.stop(t)

	// What was acknowledged survives a clean shutdown and a restart.
	restarted := startExactly(t, binary, brokerArgs...)
	checkCodecTopic(t, consumeWithKcat(t, kcat, restarted.addr, "kcat-codecs"))
	checkAutoTopic(t, consumeWithKcat(t, kcat, restarted.addr, "kcat-auto"))
	restarted.stop(t)
}

// kcatRecord is one record as kcat -C printed it.
type kcatRecord struct {
	partition int
	offset    int64
	key       string
	value     string
	headers   string
}

// codecRecords is the kcat -P input for one partition of the codecs topic:
// "key:value" lines whose values repeat text so the codecs compress.
func codecRecords(partition int) string {
	var input strings.Builder
	for i := range kcatRecordsPerPartition {
		fmt.Fprintf(&input, "%s\n", codecLine(partition, i))
	}
	return input.String()
}

func codecLine(partition, i int) string {
	return fmt.Sprintf("k%d-%d:v%d-%d-%s", partition, i, partition, i, strings.Repeat("abc", i%50))
}

func checkCodecTopic(t *testing.T, records []kcatRecord) {
	t.Helper()
	byPartition := groupByPartition(t, records)
	if len(byPartition) != len(kcatCodecs) {
		t.Fatalf("codecs topic: records in %d partitions, want %d", len(byPartition), len(kcatCodecs))
	}
	for partition, codec := range kcatCodecs {
		got := byPartition[partition]
		if len(got) != kcatRecordsPerPartition {
			t.Fatalf("partition %d (%s): %d records, want %d", partition, codec, len(got), kcatRecordsPerPartition)
		}
		for i, r := range got {
			if r.offset != int64(i) {
				t.Fatalf("partition %d (%s): record %d has offset %d", partition, codec, i, r.offset)
			}
			if line := r.key + ":" + r.value; line != codecLine(partition, i) {
				t.Fatalf("partition %d (%s) offset %d: got %q, want %q", partition, codec, i, line, codecLine(partition, i))
			}
			if r.headers != "codec="+codec {
				t.Fatalf("partition %d offset %d: headers %q, want %q", partition, i, r.headers, "codec="+codec)
			}
		}
	}
}

// checkAutoTopic checks that every record of the auto-created topic came
// back once, that each key stayed in one partition, and that each
// partition holds its records in production order at offsets 0, 1, ...
func checkAutoTopic(t *testing.T, records []kcatRecord) {
	t.Helper()
	if len(records) != kcatAutoRecords {
		t.Fatalf("auto topic: %d records, want %d", len(records), kcatAutoRecords)
	}
	keyPartition := map[string]int{}
	seen := map[int]bool{}
	for partition, got := range groupByPartition(t, records) {
		if partition < 0 || partition >= kcatAutoPartitions {
			t.Fatalf("auto topic: record in partition %d, topic has %d", partition, kcatAutoPartitions)
		}
		last := -1
		for i, r := range got {
			index, err := strconv.Atoi(strings.TrimPrefix(r.value, "auto-"))
			if err != nil || r.key != fmt.Sprintf("key-%d", index%kcatAutoKeys) {
				t.Fatalf("auto topic partition %d offset %d: unexpected record %q:%q", partition, r.offset, r.key, r.value)
			}
			if r.offset != int64(i) || index <= last {
				t.Fatalf("auto topic partition %d: record %d is offset %d index %d after index %d", partition, i, r.offset, index, last)
			}
			if seen[index] {
				t.Fatalf("auto topic: record %d read twice", index)
			}
			if p, ok := keyPartition[r.key]; ok && p != partition {
				t.Fatalf("auto topic: key %s in partitions %d and %d", r.key, p, partition)
			}
			seen[index], keyPartition[r.key], last = true, partition, index
		}
	}
}

// groupByPartition groups records by partition, keeping their order.
func groupByPartition(t *testing.T, records []kcatRecord) map[int][]kcatRecord {
	t.Helper()
	byPartition := map[int][]kcatRecord{}
	for _, r := range records {
		byPartition[r.partition] = append(byPartition[r.partition], r)
	}
	return byPartition
}

// consumeWithKcat reads a topic from the beginning to its end with kcat -C.
func consumeWithKcat(t *testing.T, kcat, addr, topic string) []kcatRecord {
	t.Helper()
	// Fields are separated by a byte no key, value or header contains.
	output := runKcat(t, kcat, "", "-b", addr, "-C", "-t", topic, "-e", "-q", "-o", "beginning",
		"-f", "%p\x1f%o\x1f%k\x1f%s\x1f%h\n")
	var records []kcatRecord
	scanner := bufio.NewScanner(strings.NewReader(output))
	scanner.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for scanner.Scan() {
		fields := strings.Split(scanner.Text(), "\x1f")
		if len(fields) != 5 {
			t.Fatalf("kcat -C %s: unparsable line %q", topic, scanner.Text())
		}
		partition, err1 := strconv.Atoi(fields[0])
		offset, err2 := strconv.ParseInt(fields[1], 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			t.Fatalf("kcat -C %s: line %q: %v", topic, scanner.Text(), err)
		}
		records = append(records, kcatRecord{partition, offset, fields[2], fields[3], fields[4]})
	}
	return records
}

// kcatMetadata is the part of `kcat -L -J` output the test checks.
type kcatMetadata struct {
	ControllerID int `json:"controllerid"`
	Brokers      []struct {
		ID   int    `json:"id"`
		Name string `json:"name"`
	} `json:"brokers"`
	Topics []struct {
		Topic      string `json:"topic"`
		Error      string `json:"error"`
		Partitions []struct {
			Partition int `json:"partition"`
			Leader    int `json:"leader"`
			Replicas  []struct {
				ID int `json:"id"`
			} `json:"replicas"`
			ISRs []struct {
				ID int `json:"id"`
			} `json:"isrs"`
		} `json:"partitions"`
	} `json:"topics"`
}

// checkKcatMetadata checks kcat -L: one broker (node 0, the controller,
// at addr) leading every partition of the wanted topics.
func checkKcatMetadata(t *testing.T, kcat, addr string, want map[string]int) {
	t.Helper()
	output := runKcat(t, kcat, "", "-b", addr, "-L", "-J")
	var metadata kcatMetadata
	if err := json.Unmarshal([]byte(output), &metadata); err != nil {
		t.Fatalf("kcat -L -J: %v in %q", err, output)
	}
	if len(metadata.Brokers) != 1 || metadata.Brokers[0].ID != 0 || metadata.Brokers[0].Name != addr {
		t.Fatalf("kcat -L brokers: %+v, want node 0 at %s", metadata.Brokers, addr)
	}
	if metadata.ControllerID != 0 {
		t.Fatalf("kcat -L controller %d, want 0", metadata.ControllerID)
	}
	found := map[string]int{}
	for _, topic := range metadata.Topics {
		if topic.Error != "" {
			t.Fatalf("kcat -L topic %s: error %s", topic.Topic, topic.Error)
		}
		for i, p := range topic.Partitions {
			if p.Partition != i || p.Leader != 0 || len(p.Replicas) != 1 || p.Replicas[0].ID != 0 ||
				len(p.ISRs) != 1 || p.ISRs[0].ID != 0 {
				t.Fatalf("kcat -L topic %s partition %d: %+v", topic.Topic, i, p)
			}
		}
		found[topic.Topic] = len(topic.Partitions)
	}
	for topic, partitions := range want {
		if found[topic] != partitions {
			t.Fatalf("kcat -L: topic %s has %d partitions, want %d (all: %v)", topic, found[topic], partitions, found)
		}
	}
}

// runKcat runs kcat with stdin and returns its stdout; it fails the test
// if kcat fails, reports a delivery failure or runs over 30 s.
func runKcat(t *testing.T, kcat, stdin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	command := exec.CommandContext(ctx, kcat, args...)
	command.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	command.Stdout, command.Stderr = &stdout, &stderr
	if err := command.Run(); err != nil {
		t.Fatalf("kcat %s: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr.String())
	}
	for _, failure := range []string{"Delivery failed", "ERROR"} {
		if strings.Contains(stderr.String(), failure) {
			t.Fatalf("kcat %s: %s\nstderr:\n%s", strings.Join(args, " "), failure, stderr.String())
		}
	}
	return stdout.String()
}

// The `exactly` binary the kcat tests run, built once per test process
// (buildExactly) into a directory TestMain removes.
var built struct {
	once   sync.Once
	dir    string
	binary string
	err    error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// buildExactly builds cmd/exactly, once for all the tests of this process,
// and returns the binary's path.
func buildExactly(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			built.err = err
			return
		}
		if built.dir, err = os.MkdirTemp("", "exactly-conformance-"); err != nil {
			built.err = err
			return
		}
		binary := filepath.Join(built.dir, "exactly")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		command := exec.CommandContext(ctx, "go", "build", "-o", binary, "./cmd/exactly")
		command.Dir = root
		if output, err := command.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build ./cmd/exactly: %v\n%s", err, output)
			return
		}
		built.binary = binary
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.binary
}

// moduleRoot finds the directory holding go.mod, from the working
// directory upwards.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// exactlyProcess is a running `exactly broker` subprocess.
type exactlyProcess struct {
	command *exec.Cmd
	addr    string
	stderr  *testutil.SyncBuffer // written by the exec package's copying goroutine
	exited  chan error           // receives Wait's result once
	stopped bool                 // stop saw the process exit
}

var listeningLine = regexp.MustCompile(`listening on (\S+) `)

// startExactly starts `exactly broker --listen 127.0.0.1:0 args...`, reads
// the address it prints, and waits until it accepts connections. The
// process is killed at the end of the test if stop was not called.
func startExactly(t *testing.T, binary string, args ...string) *exactlyProcess {
	t.Helper()
	command := exec.Command(binary, append([]string{"broker", "--listen", "127.0.0.1:0"}, args...)...)
	stdout, err := command.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	process := &exactlyProcess{command: command, stderr: &testutil.SyncBuffer{}, exited: make(chan error, 1)}
	command.Stderr = process.stderr
	if err := command.Start(); err != nil {
		t.Fatalf("start %s: %v", binary, err)
	}
	t.Cleanup(func() {
		if !process.stopped {
			command.Process.Kill()
			<-process.exited
		}
	})
	addrs := make(chan string, 1)
	go func() {
		scanner := bufio.NewScanner(stdout)
		for scanner.Scan() {
			if match := listeningLine.FindStringSubmatch(scanner.Text()); match != nil {
				addrs <- match[1]
			}
		}
		process.exited <- command.Wait()
	}()
	select {
	case process.addr = <-addrs:
	case err := <-process.exited:
		process.exited <- err
		t.Fatalf("exactly broker exited before listening: %v\nstderr:\n%s", err, process.stderr)
	case <-time.After(15 * time.Second):
		t.Fatalf("exactly broker printed no address within 15 s\nstderr:\n%s", process.stderr)
	}
	waitAccepting(t, process.addr, 10*time.Second)
	return process
}

// waitAccepting polls addr until a TCP connection succeeds or the timeout
// passes.
func waitAccepting(t *testing.T, addr string, timeout time.Duration) {
	t.Helper()
	testutil.Eventually(t, timeout, "the broker at "+addr+" accepting connections", func() (bool, string) {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false, err.Error()
		}
		conn.Close()
		return true, ""
	})
}

// stop sends SIGTERM and checks that the broker exits 0 within 15 s.
func (p *exactlyProcess) stop(t *testing.T) {
	t.Helper()
	if err := p.command.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	select {
	case err := <-p.exited:
		p.stopped = true
		if err != nil {
			t.Fatalf("exactly broker after SIGTERM: %v\nstderr:\n%s", err, p.stderr)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("exactly broker still running 15 s after SIGTERM\nstderr:\n%s", p.stderr)
	}
}
