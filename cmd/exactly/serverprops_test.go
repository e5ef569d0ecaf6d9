package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// kafka4Properties is Kafka 4.x's config/server.properties (KRaft,
// combined mode, dynamic quorum), comments left out.
const kafka4Properties = `process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=localhost:9093
listeners=PLAINTEXT://:9092,CONTROLLER://:9093
inter.broker.listener.name=PLAINTEXT
advertised.listeners=PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600
log.dirs=/tmp/kraft-combined-logs
num.partitions=1
num.recovery.threads.per.data.dir=1
offsets.topic.replication.factor=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
log.retention.hours=168
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
`

// mapped is the outcome of mapping a properties file and --config entries.
type mapped struct {
	opts     brokerOptions
	notes    []string
	settings map[string]string
	err      error
}

// mapServerProps maps content (written to server.properties, unless
// empty) and configs as runBroker does, with flags given on the command
// line (by name, with their values set in start).
func mapServerProps(t *testing.T, content string, configs []string, start brokerOptions, given ...string) mapped {
	t.Helper()
	file := ""
	if content != "" {
		file = filepath.Join(t.TempDir(), "server.properties")
		if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := readPropEntries(file, configs)
	if err != nil {
		return mapped{err: err}
	}
	props, err := classifyProps(entries)
	if err != nil {
		return mapped{err: err}
	}
	isGiven := func(name string) bool {
		for _, g := range given {
			if g == name {
				return true
			}
		}
		return false
	}
	notes, err := props.apply(&start, isGiven)
	return mapped{opts: start, notes: notes, settings: props.settings, err: err}
}

func defaultOptions() brokerOptions {
	return brokerOptions{listen: "127.0.0.1:9092", dataDir: "data"}
}

// TestServerPropsKafka4File: Kafka 4.x's own file maps to a one-member
// quorum on its controller listener; the controller listener leaves the
// client listeners; each ignored key is one line naming its line and why;
// the broker settings pass through.
func TestServerPropsKafka4File(t *testing.T) {
	t.Parallel()
	m := mapServerProps(t, kafka4Properties, nil, defaultOptions())
	if m.err != nil {
		t.Fatal(m.err)
	}
	want := brokerOptions{nodeID: 1, listen: "127.0.0.1:9092", dataDir: "/tmp/kraft-combined-logs",
		controllerQuorum: "1@localhost:9093", controllerListen: ":9093"}
	if m.opts != want {
		t.Errorf("options %+v, want %+v", m.opts, want)
	}
	for key, value := range map[string]string{
		"listeners":                      "PLAINTEXT://:9092",
		"advertised.listeners":           "PLAINTEXT://localhost:9092",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
		"num.partitions":                 "1",
		"log.retention.hours":            "168",
		"log.segment.bytes":              "1073741824",
		"socket.request.max.bytes":       "104857600",
	} {
		if m.settings[key] != value {
			t.Errorf("setting %s = %q, want %q", key, m.settings[key], value)
		}
	}
	for _, key := range []string{"node.id", "process.roles", "num.io.threads", "log.dirs", "controller.listener.names"} {
		if _, ok := m.settings[key]; ok {
			t.Errorf("%s passed on as a broker setting", key)
		}
	}
	ignored := map[string]int{
		"num.network.threads": 9, "num.io.threads": 10, "socket.send.buffer.bytes": 11, "socket.receive.buffer.bytes": 12,
		"num.recovery.threads.per.data.dir": 16, "offsets.topic.replication.factor": 17,
		"share.coordinator.state.topic.replication.factor": 18, "share.coordinator.state.topic.min.isr": 19,
		"transaction.state.log.replication.factor": 20, "transaction.state.log.min.isr": 21,
	}
	count := 0
	for _, note := range m.notes {
		if strings.Contains(note, "\n") {
			t.Errorf("note of more than one line: %q", note)
		}
		key, rest, ok := strings.Cut(strings.TrimPrefix(note, "ignoring "), " (server.properties line ")
		if !strings.HasPrefix(note, "ignoring ") || !ok {
			continue
		}
		count++
		line, ok := ignored[key]
		if !ok || !strings.HasPrefix(rest, strconv.Itoa(line)+"): ") || len(rest) < 20 {
			t.Errorf("ignore line %q", note)
		}
	}
	if count != len(ignored) {
		t.Errorf("%d ignore lines, want %d: %q", count, len(ignored), m.notes)
	}
	if last := m.notes[len(m.notes)-1]; !strings.Contains(last, "one-member quorum") {
		t.Errorf("no note on the standalone quorum: %q", m.notes)
	}
}

// TestServerPropsSample: docs/server.properties is member 1 of a 3-broker
// cluster: voter 1 of 1,2,3, Raft bound at its CONTROLLER listener, RF 3
// kept for the member.
func TestServerPropsSample(t *testing.T) {
	t.Parallel()
	sample, err := os.ReadFile("../../docs/server.properties")
	if err != nil {
		t.Fatal(err)
	}
	m := mapServerProps(t, string(sample), nil, defaultOptions())
	if m.err != nil {
		t.Fatal(m.err)
	}
	want := brokerOptions{nodeID: 1, listen: "127.0.0.1:9092", dataDir: "/tmp/exactly-member-1",
		controllerQuorum: "1@127.0.0.1:9192,2@127.0.0.1:9193,3@127.0.0.1:9194", controllerListen: "127.0.0.1:9192"}
	if m.opts != want {
		t.Errorf("options %+v, want %+v", m.opts, want)
	}
	if m.settings["default.replication.factor"] != "3" || m.settings["min.insync.replicas"] != "2" ||
		m.settings["listeners"] != "PLAINTEXT://127.0.0.1:9092" || m.settings["group.initial.rebalance.delay.ms"] != "0" {
		t.Errorf("settings %v", m.settings)
	}
	voters, err := parseControllerQuorum(m.opts.controllerQuorum, 1, m.opts.controllerListen)
	if err != nil || len(voters) != 3 || voters[1].RPC != "127.0.0.1:9292" {
		t.Errorf("voters %+v, %v", voters, err)
	}
}

// TestServerPropsFlagsAndConfig: node.id, broker.id, log.dirs and log.dir
// work from --config too; flags given on the command line win, with a
// note; a repeated ignored key is one line.
func TestServerPropsFlagsAndConfig(t *testing.T) {
	t.Parallel()
	m := mapServerProps(t, "", []string{"node.id=3", "log.dirs=/d3", "num.partitions=4"}, defaultOptions())
	if m.err != nil || m.opts.nodeID != 3 || m.opts.dataDir != "/d3" || m.settings["num.partitions"] != "4" || m.opts.controllerQuorum != "" {
		t.Errorf("--config: %+v %v %v", m.opts, m.settings, m.err)
	}
	m = mapServerProps(t, "", []string{"broker.id=5", "log.dir=/d5"}, defaultOptions())
	if m.err != nil || m.opts.nodeID != 5 || m.opts.dataDir != "/d5" {
		t.Errorf("broker.id, log.dir: %+v %v", m.opts, m.err)
	}
	start := defaultOptions()
	start.nodeID, start.dataDir = 7, "/flag"
	m = mapServerProps(t, "node.id=1\nlog.dirs=/file\nnum.io.threads=8\nnum.io.threads=16\n", []string{"node.id=2"}, start, "node-id", "data-dir")
	if m.err != nil || m.opts.nodeID != 7 || m.opts.dataDir != "/flag" {
		t.Fatalf("flags: %+v %v", m.opts, m.err)
	}
	text := strings.Join(m.notes, "\n")
	if !strings.Contains(text, "node.id=2 (--config) is overridden by --node-id") || !strings.Contains(text, "log.dirs=/file (server.properties line 2) is overridden by --data-dir") ||
		strings.Count(text, "ignoring num.io.threads") != 1 {
		t.Errorf("notes:\n%s", text)
	}
	// A file's listeners lose to --listen.
	m = mapServerProps(t, "listeners=PLAINTEXT://127.0.0.1:9999\nadvertised.listeners=PLAINTEXT://h:9999\n", nil, defaultOptions(), "listen")
	if _, ok := m.settings["listeners"]; ok || m.err != nil {
		t.Errorf("--listen against the file's listeners: %v %v", m.settings, m.err)
	}
	// default.replication.factor above 1 needs a cluster.
	if m := mapServerProps(t, "default.replication.factor=3\n", nil, defaultOptions()); m.err == nil {
		t.Error("default.replication.factor=3 accepted on a single broker")
	}
	if m := mapServerProps(t, "default.replication.factor=3\ncontroller.quorum.voters=0@127.0.0.1:9192\n", nil, defaultOptions()); m.err != nil || m.opts.controllerQuorum == "" {
		t.Errorf("default.replication.factor=3 in a cluster: %v", m.err)
	}
}

// TestServerPropsRoles: process.roles broker alone is a member that does
// not vote, at its controller listener's address.
func TestServerPropsRoles(t *testing.T) {
	t.Parallel()
	const voters = "controller.quorum.voters=1@127.0.0.1:9192,2@127.0.0.1:9193,3@127.0.0.1:9194\ncontroller.listener.names=CONTROLLER\n"
	m := mapServerProps(t, "process.roles=broker\nnode.id=4\n"+voters+
		"listeners=PLAINTEXT://:9095,CONTROLLER://:9195\nadvertised.listeners=PLAINTEXT://127.0.0.1:9095,CONTROLLER://127.0.0.1:9195\n", nil, defaultOptions())
	if m.err != nil || m.opts.controllerListen != "127.0.0.1:9195" || m.settings["listeners"] != "PLAINTEXT://:9095" {
		t.Fatalf("non-voter: %+v %v %v", m.opts, m.settings, m.err)
	}
	all, err := parseControllerQuorum(m.opts.controllerQuorum, 4, m.opts.controllerListen)
	if err != nil || len(all) != 4 || quorumVoter(all, 4) || !quorumVoter(all, 3) {
		t.Errorf("non-voter 4: %+v %v", all, err)
	}
}

// TestServerPropsRefusals: each mistake is one line naming the key, where
// it was given and what to do.
func TestServerPropsRefusals(t *testing.T) {
	t.Parallel()
	const voters = "controller.quorum.voters=1@127.0.0.1:9192,2@127.0.0.1:9193,3@127.0.0.1:9194\n"
	for _, tc := range []struct {
		name, content string
		configs       []string
		want          string
	}{
		{"controller only", "process.roles=controller\nnode.id=1\n" + voters, nil,
			"process.roles=controller (server.properties line 1): exactly has no controller-only nodes"},
		{"two log dirs", "log.dirs=/a,/b\n", nil,
			"log.dirs=/a,/b (server.properties line 1) names 2 directories; exactly keeps one data directory: name one"},
		{"unknown key", "num.partitions=1\n\nlog.retention.msec=60000\n", nil,
			`unknown setting "log.retention.msec" in server.properties line 3; did you mean log.retention.ms?`},
		{"unknown mapped key", "", []string{"node.idd=1"},
			`unknown setting "node.idd" in --config; did you mean node.id?`},
		{"unknown, nothing near", "", []string{"quite.unheard.of=1"},
			`unknown setting "quite.unheard.of" in --config (the broker settings are listed in 'exactly broker --help')`},
		{"bad value", "num.partitions=0\n", nil, "num.partitions: 0 is below the minimum 1 (server.properties line 1)"},
		{"ids disagree", "node.id=1\nbroker.id=2\n", nil, "node.id=1 (server.properties line 1) and broker.id=2 (server.properties line 2) disagree"},
		{"negative id", "node.id=-1\n", nil, "node.id=-1 (server.properties line 1): want a whole number from 0 to 2147483647"},
		{"roles without voters", "process.roles=broker,controller\n", nil, "needs controller.quorum.voters=id@host:port"},
		{"bootstrap servers", "process.roles=broker,controller\nnode.id=1\ncontroller.quorum.bootstrap.servers=h1:9093,h2:9093,h3:9093\n", nil,
			"exactly's quorum is static and needs the voters' ids: give controller.quorum.voters="},
		{"voter not listed", "process.roles=broker,controller\nnode.id=4\n" + voters, nil,
			"node.id 4 is not in controller.quorum.voters; list it there, or use process.roles=broker"},
		{"broker role listed", "process.roles=broker\nnode.id=2\n" + voters, nil,
			"process.roles=broker (server.properties line 1): node.id 2 is listed in controller.quorum.voters"},
		{"non-voter without a controller listener", "process.roles=broker\nnode.id=4\n" + voters, nil,
			"node.id 4 is not a voter, and exactly runs a Raft non-voter on every member: add CONTROLLER://host:port to listeners"},
		{"inter-broker listener", "listeners=PLAINTEXT://:9092,SSL://:9093\ninter.broker.listener.name=SSL\nprocess.roles=broker,controller\nnode.id=1\n" + voters, nil,
			"inter.broker.listener.name=SSL (server.properties line 2): the members of a cluster reach each other in plaintext; name a PLAINTEXT listener"},
		{"inter-broker listener unknown", "listeners=PLAINTEXT://:9092\ninter.broker.listener.name=INTERNAL\n", nil,
			"inter.broker.listener.name=INTERNAL (server.properties line 2): no client listener is named INTERNAL"},
		{"inter-broker protocol", "security.inter.broker.protocol=SSL\n", nil, "security.inter.broker.protocol=SSL"},
		{"controller over TLS", voters + "controller.listener.names=CONTROLLER\nlisteners=PLAINTEXT://:9092,CONTROLLER://:9192\nlistener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:SSL\n", nil,
			"maps the controller listener CONTROLLER to SSL; exactly's Raft transport is plaintext TCP only"},
		{"config without =", "", []string{"node.id"}, `--config "node.id": want key=value`},
	} {
		m := mapServerProps(t, tc.content, tc.configs, defaultOptions())
		if m.err == nil {
			t.Errorf("%s: accepted (%+v)", tc.name, m.opts)
			continue
		}
		if _, ok := m.err.(*usageErr); !ok {
			t.Errorf("%s: %T is not a usage error", tc.name, m.err)
		}
		if msg := m.err.Error(); !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") || strings.Count(msg, ",") > 12 {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, msg, tc.want)
		}
	}
}

// TestBrokerCommandMistakes: through run, a bad key or flag is two lines
// on stderr (the mistake, where help is) and exit status 2.
func TestBrokerCommandMistakes(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(file, []byte("process.roles=broker,controller\nlog.retention.msec=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"broker", "--config-file", file}, `exactly broker: unknown setting "log.retention.msec" in server.properties line 2; did you mean log.retention.ms?`},
		{[]string{"broker", "--node-id", "-1"}, "exactly broker: --node-id -1: must be 0..2147483647"},
		{[]string{"broker", "--controller-quorum", "1@127.0.0.1:9192", "--node-id", "2"}, "exactly broker: --node-id 2 is not in --controller-quorum"},
		{[]string{"broker", "--profile", "gpu"}, `exactly broker: --profile "gpu": want cpu, mem, block, mutex or trace`},
	} {
		var stdout, stderr strings.Builder
		code := run(tc.args, &stdout, &stderr)
		lines := strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n")
		if code != 2 || len(lines) != 2 || !strings.HasPrefix(lines[0], tc.want) || lines[1] != "see 'exactly broker --help'" {
			t.Errorf("%q: exit %d, stderr:\n%s", tc.args, code, stderr.String())
		}
	}
}

// TestBrokerHelpTellsTheTruth: `exactly broker --help` names the clients
// the repository tests, says the coordinators and topic configs are
// replicated in a cluster, and describes Kafka's server.properties.
func TestBrokerHelpTellsTheTruth(t *testing.T) {
	t.Parallel()
	var stdout, stderr strings.Builder
	if code := run([]string{"broker", "--help"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d", code)
	}
	help := strings.Join(strings.Fields(stderr.String()), " ")
	for _, want := range []string{"franz-go", "kcat", "sarama", "kafka-go", "move with leadership",
		"AlterConfigs and IncrementalAlterConfigs sent to any member) go through the quorum",
		"process.roles", "controller.listener.names", "ignored, one line each", "docs/server.properties"} {
		if !strings.Contains(help, want) {
			t.Errorf("--help lacks %q", want)
		}
	}
	for _, stale := range []string{"kafkajs", "Java client", "local to each broker", "changes only the broker", "seed"} {
		if strings.Contains(strings.ToLower(help), strings.ToLower(stale)) {
			t.Errorf("--help still says %q", stale)
		}
	}
}
