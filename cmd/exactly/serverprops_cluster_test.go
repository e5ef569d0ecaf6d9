package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/internal/loopback"
	"github.com/exactly-eos/exactly/internal/testutil"
)

// memberProperties is docs/server.properties rewritten for member id of
// a 3-broker cluster whose ports start at port on host: the lines the
// sample says to change, and nothing else.
func memberProperties(t *testing.T, sample, host string, port, id int, dataDir string) string {
	t.Helper()
	addr := func(p int) string { return net.JoinHostPort(host, strconv.Itoa(p)) }
	client, raft := addr(port+id-1), addr(port+100+id-1)
	replace := map[string]string{
		"node.id":                  strconv.Itoa(id),
		"log.dirs":                 dataDir,
		"listeners":                "PLAINTEXT://" + client + ",CONTROLLER://" + raft,
		"advertised.listeners":     "PLAINTEXT://" + client + ",CONTROLLER://" + raft,
		"controller.quorum.voters": fmt.Sprintf("1@%s,2@%s,3@%s", addr(port+100), addr(port+101), addr(port+102)),
	}
	var out []string
	for _, line := range strings.Split(sample, "\n") {
		key, _, ok := strings.Cut(line, "=")
		if value, found := replace[key]; ok && found {
			line = key + "=" + value
			delete(replace, key)
		}
		out = append(out, line)
	}
	if len(replace) > 0 {
		t.Fatalf("docs/server.properties lacks %v", replace)
	}
	return strings.Join(out, "\n")
}

// propsMember is one `exactly broker --config-file` process.
type propsMember struct {
	cmd    *exec.Cmd
	stderr *testutil.SyncBuffer
	lines  chan string   // its stdout
	exited chan struct{} // closed once waited for
	err    error         // the wait's result, set before exited closes
}

// startPropsMember runs this test binary as `exactly broker --config-file
// file`; the cleanup kills it (by its PID) if the test did not stop it.
func startPropsMember(t *testing.T, file string) *propsMember {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	m := &propsMember{cmd: exec.Command(exe, "broker", "--config-file", file), stderr: &testutil.SyncBuffer{},
		lines: make(chan string, 64), exited: make(chan struct{})}
	m.cmd.Env = append(os.Environ(), asExactlyEnv+"=1")
	m.cmd.Stderr = m.stderr
	stdout, err := m.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		scanner := bufio.NewScanner(stdout)
		for scanner.Scan() {
			select {
			case m.lines <- scanner.Text():
			default: // nobody reads any more
			}
		}
		m.err = m.cmd.Wait()
		close(m.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-m.exited:
		default:
			m.cmd.Process.Kill()
			<-m.exited
		}
	})
	return m
}

// waitLine returns the first stdout line that contains want.
func (m *propsMember) waitLine(t *testing.T, want string, timeout time.Duration) string {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case line := <-m.lines:
			if strings.Contains(line, want) {
				return line
			}
		case <-m.exited:
			t.Fatalf("member ended (%v) before printing %q; stderr:\n%s", m.err, want, m.stderr.String())
		case <-deadline:
			t.Fatalf("no %q within %v; stderr:\n%s", want, timeout, m.stderr.String())
		}
	}
}

// TestServerPropertiesCluster starts three members from Kafka-shaped
// server.properties files (docs/server.properties with node.id, ports and
// log.dirs changed), creates a topic of replication factor 3, produces
// with acks=all and reads every record back, then stops each member with
// SIGTERM.
func TestServerPropertiesCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-broker cluster")
	}
	t.Parallel()
	sample, err := os.ReadFile("../../docs/server.properties")
	if err != nil {
		t.Fatal(err)
	}
	host, port, dir := loopback.Host(), freeClusterPort(t, 3), t.TempDir()
	var members []*propsMember
	var seeds []string
	for id := 1; id <= 3; id++ {
		file := filepath.Join(dir, fmt.Sprintf("member-%d.properties", id))
		content := memberProperties(t, string(sample), host, port, id, filepath.Join(dir, fmt.Sprintf("member-%d", id)))
		if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		members = append(members, startPropsMember(t, file))
		seeds = append(seeds, net.JoinHostPort(host, strconv.Itoa(port+id-1)))
	}
	for i, m := range members {
		id := i + 1
		m.waitLine(t, fmt.Sprintf("exactly broker %d listening on %s (cluster member", id, seeds[i]), 30*time.Second)
		quorum := m.waitLine(t, "quorum: ", 5*time.Second)
		raft := net.JoinHostPort(host, strconv.Itoa(port+100+i))
		rpc := net.JoinHostPort(host, strconv.Itoa(port+200+i))
		if want := fmt.Sprintf("quorum: node %d (a voter of 3 listed), Raft transport on %s, quorum RPC on %s", id, raft, rpc); !strings.HasPrefix(quorum, want) {
			t.Errorf("member %d: %q, want %q...", id, quorum, want)
		}
	}
	for _, want := range []string{
		"exactly broker: ignoring num.io.threads (member-1.properties line ",
		"exactly broker: ignoring transaction.state.log.min.isr (member-1.properties line ",
		"exactly broker: ignoring share.coordinator.state.topic.replication.factor (member-1.properties line ",
	} {
		if !strings.Contains(members[0].stderr.String(), want) {
			t.Errorf("member 1's stderr lacks %q:\n%s", want, members[0].stderr.String())
		}
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("props-rf3"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"props-rf3": {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	testutil.UntilContext(t, ctx, "Metadata listing 3 brokers", func() bool {
		meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		return err == nil && len(meta.Brokers) == 3
	})
	replicatedRoundTrip(ctx, t, cl, "props-rf3", 100, true)
	cl.Close()

	for _, m := range members {
		if err := m.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	for i, m := range members {
		select {
		case <-m.exited:
			if m.err != nil {
				t.Errorf("member %d after SIGTERM: %v; stderr:\n%s", i+1, m.err, m.stderr.String())
			}
		case <-time.After(30 * time.Second):
			t.Errorf("member %d still running 30s after SIGTERM", i+1)
		}
	}
}
