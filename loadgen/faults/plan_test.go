package faults

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/internal/netem"
	"github.com/exactly-eos/exactly/wire"
)

// Every shipped plan loads, validates and says what the brief asks of it.
func TestStandardPlans(t *testing.T) {
	t.Parallel()
	want := []string{"ack-loss", "broker-partition", "broker-restart", "congested-network", "conn-reset", "consumer-crash", "coordinator-kill", "fetch-loss", "group-churn",
		"group-churn-steady", "leader-kill", "leader-pause", "none", "request-loss", "slow-follower", "slow-network", "zombie-producer"}
	if got := PlanNames(); !slices.Equal(got, want) {
		t.Fatalf("shipped plans %v, want %v", got, want)
	}
	check := map[string]func(Plan) bool{
		"none": func(p Plan) bool { return !p.NeedsProxy() && !p.NeedsProcesses() && len(p.Clients) == 0 },
		"ack-loss": func(p Plan) bool {
			return oneRule(p, ActionDropResponse, wire.APIProduce, 0.05)
		},
		"request-loss": func(p Plan) bool {
			return oneRule(p, ActionDropRequest, wire.APIProduce, 0.05)
		},
		"slow-network": func(p Plan) bool {
			r := p.Rules
			return len(r) == 1 && r[0].Action == ActionDegrade && r[0].Delay == Duration(20*time.Millisecond) &&
				r[0].Jitter == Duration(5*time.Millisecond) && r[0].Loss == 0.001 && r[0].Until == 0 && !p.NeedsProcesses()
		},
		"congested-network": func(p Plan) bool {
			r := p.Rules
			return len(r) == 1 && r[0].Action == ActionDegrade && r[0].Rate == 1_000_000 && r[0].Loss == 0.01 &&
				r[0].After == Duration(time.Second) && r[0].Until == Duration(5*time.Second)
		},
		"fetch-loss": func(p Plan) bool {
			return oneRule(p, ActionDropResponse, wire.APIFetch, 0.05)
		},
		"conn-reset": func(p Plan) bool {
			r := p.Rules
			return len(r) == 1 && r[0].Action == ActionReset && len(r[0].APIs) == 0 && *r[0].Probability == 0.02
		},
		"broker-restart": func(p Plan) bool {
			a := p.Processes
			return len(a) == 1 && a[0].Action == ProcessKillRestart && a[0].Every == Duration(10*time.Second) &&
				a[0].Down == Duration(time.Second) && p.NeedsProcesses() && !p.NeedsProxy()
		},
		"leader-kill": func(p Plan) bool {
			a := p.Processes
			return len(a) == 1 && a[0].Action == ProcessLeaderKill && a[0].Action.Selects() && a[0].Count == 2 &&
				a[0].Down == Duration(5*time.Second) && a[0].Broker == nil && !p.NeedsProxy()
		},
		"broker-partition": func(p Plan) bool {
			a := p.Processes
			return len(a) == 1 && a[0].Action == ProcessBrokerPartition && a[0].Action.Selects() && a[0].Count == 2 &&
				a[0].Every == Duration(12*time.Second) && a[0].Down == Duration(5*time.Second) && a[0].Broker == nil && !p.NeedsProxy()
		},
		"slow-follower": func(p Plan) bool {
			// From the start, for longer than any run, 10 ms each way.
			a := p.Processes
			return len(a) == 1 && a[0].Action == ProcessSlowFollower && a[0].Action.Selects() && a[0].After == 0 &&
				a[0].Count == 0 && a[0].Every == 0 && a[0].Down >= Duration(time.Hour) && a[0].Broker == nil &&
				a[0].Network != nil && a[0].Network.Link() == netem.Link{Delay: 10 * time.Millisecond} && !p.NeedsProxy()
		},
		"leader-pause": func(p Plan) bool {
			a := p.Processes
			return len(a) == 1 && a[0].Action == ProcessLeaderPause && a[0].Action.Selects() && a[0].Count == 2 &&
				a[0].Down == Duration(5*time.Second) && a[0].Broker == nil && !p.NeedsProxy()
		},
		"coordinator-kill": func(p Plan) bool {
			a := p.Processes
			return len(a) == 1 && a[0].Action == ProcessCoordinatorKill && a[0].Action.Selects() && a[0].Count == 1 &&
				a[0].Broker == nil && !p.NeedsProxy()
		},
		"zombie-producer": func(p Plan) bool {
			c := p.Clients
			return len(c) == 1 && c[0].Action == ClientZombieProducer && c[0].Pause > 0
		},
		"consumer-crash": func(p Plan) bool {
			c := p.Clients
			return len(c) == 1 && c[0].Action == ClientConsumerCrash && c[0].Every > 0
		},
		"group-churn": func(p Plan) bool {
			c := p.Clients
			if len(c) != 1 || c[0].Action != ClientGroupChurn || p.Duration <= 0 || p.Partitions < 2 || c[0].ChainedStages() < 2 {
				return false
			}
			// Every variant of TestTxnEtl's classic protocol, workers that
			// leave at once and after commits, and waves within the
			// plan's own duration.
			var phases []string
			for _, wave := range c[0].Waves(time.Duration(p.Duration)) {
				phases = append(phases, wave.Phase.Name)
			}
			return slices.Contains(phases, "range") && slices.Contains(phases, "cooperative-sticky") &&
				slices.Contains(phases, "cooperative-sticky-static") && slices.Contains(c[0].LeaveAfter, 0) &&
				slices.ContainsFunc(c[0].LeaveAfter, func(n int) bool { return n > 0 })
		},
		"group-churn-steady": func(p Plan) bool {
			c := p.Clients
			return len(c) == 1 && c[0].Action == ClientGroupChurn && c[0].ChainedStages() == 2 &&
				slices.Equal(c[0].Phases, []string{"cooperative-sticky"}) && slices.Contains(c[0].LeaveAfter, 0)
		},
	}
	for _, name := range want {
		plan, err := LoadPlan(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if plan.Name != name || plan.Description == "" {
			t.Errorf("%s: name %q, description %q", name, plan.Name, plan.Description)
		}
		if !check[name](plan) {
			t.Errorf("%s: unexpected content %+v", name, plan)
		}
		// The .yaml suffix is accepted too.
		if _, err := LoadPlan(name + ".yaml"); err != nil {
			t.Errorf("%s.yaml: %v", name, err)
		}
	}
}

func oneRule(p Plan, action Action, api int16, share float64) bool {
	r := p.Rules
	return len(r) == 1 && r[0].Action == action && slices.Equal(r[0].APIs, []APIKey{APIKey(api)}) &&
		r[0].Probability != nil && *r[0].Probability == share
}

// A plan from a file, with every field spelled out, round-trips.
func TestLoadPlanFromFile(t *testing.T) {
	t.Parallel()
	text := `
name: custom
seed: 99
rules:
  - name: slow fetch
    action: delay
    apis: [fetch, 8]
    node: 2
    every: 3
    after: 1s
    until: 5s
    phase: response
    duration: 50ms
  - action: blackhole
    broker: 127.0.0.1:9092
    after: 2s
    duration: 1s
processes:
  - action: pause
    broker: 1
    after: 1s
    count: 2
    every: 3s
    down: 500ms
clients:
  - action: consumer-crash
    after: 2s
`
	file := filepath.Join(t.TempDir(), "custom.yaml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, err := LoadPlan(file)
	if err != nil {
		t.Fatal(err)
	}
	slow := plan.Rules[0]
	if plan.Seed != 99 || slow.Name != "slow fetch" || !slices.Equal(slow.APIs, []APIKey{APIKey(wire.APIFetch), APIKey(wire.APIOffsetCommit)}) ||
		*slow.Node != 2 || slow.Every != 3 || slow.Phase != PhaseResponse || slow.Duration != Duration(50*time.Millisecond) {
		t.Fatalf("rule 0 decoded as %+v", slow)
	}
	if start, end := plan.Rules[1].window(); !plan.Rules[1].clockDriven() || start != 2*time.Second || end != 3*time.Second {
		t.Fatalf("clock-driven blackhole window %v..%v, want 2s..3s", start, end)
	}
	pause := plan.Processes[0]
	if got := pause.Times(time.Minute); !slices.Equal(got, []time.Duration{time.Second, 4 * time.Second}) {
		t.Fatalf("pause fires at %v, want [1s 4s]", got)
	}
	if got := plan.Clients[0].Times(time.Minute); !slices.Equal(got, []time.Duration{2 * time.Second}) {
		t.Fatalf("consumer-crash fires at %v, want once at 2s", got)
	}
}

// A slow-follower action parses with every network field, and with a zero
// network (a reference run through the same proxies).
func TestSlowFollowerPlan(t *testing.T) {
	t.Parallel()
	plan, err := ParsePlan([]byte(`
name: slow
processes:
  - action: slow-follower
    after: 1s
    down: 30s
    network: {delay: 5ms, jitter: 1ms, distribution: normal, rate: 10MB/s, loss: 0.001, retransmit: 100ms}
  - action: slow-follower
    down: 1h
    network: {}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := netem.Link{Delay: 5 * time.Millisecond, Jitter: time.Millisecond, Distribution: netem.Normal, Rate: 10_000_000,
		Loss: 0.001, Retransmit: 100 * time.Millisecond}
	slow, reference := plan.Processes[0], plan.Processes[1]
	if slow.Network == nil || slow.Network.Link() != want || slow.After != Duration(time.Second) || slow.Down != Duration(30*time.Second) {
		t.Fatalf("slow-follower decoded as %+v (network %v), want %v", slow, slow.Network, want)
	}
	if reference.Network == nil || !reference.Network.Zero() {
		t.Fatalf("network: {} decoded as %v, want a zero network", reference.Network)
	}
	if !plan.NeedsProcesses() || plan.NeedsProxy() || !ProcessSlowFollower.Selects() {
		t.Fatalf("plan needs processes %v, proxy %v; slow-follower selects %v", plan.NeedsProcesses(), plan.NeedsProxy(), ProcessSlowFollower.Selects())
	}
}

// Invalid plans are refused with an error that names the problem.
func TestInvalidPlans(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, yaml, want string }{
		{"unknown action", "name: x\nrules: [{action: explode}]", `action "explode" is not one of`},
		{"probability above 1", "name: x\nrules: [{action: drop-request, probability: 1.5}]", "probability 1.5 is outside [0, 1]"},
		{"negative probability", "name: x\nrules: [{action: drop-request, probability: -0.1}]", "outside [0, 1]"},
		{"two triggers", "name: x\nrules: [{action: reset, probability: 0.1, every: 3}]", "exclusive"},
		{"unknown API", "name: x\nrules: [{action: reset, apis: [Produse]}]", `unknown API "Produse"`},
		{"API number out of range", "name: x\nrules: [{action: reset, apis: [400]}]", "outside 0..94"},
		{"delay without duration", "name: x\nrules: [{action: delay, apis: [Fetch]}]", "delay needs a duration"},
		{"phase on drop", "name: x\nrules: [{action: drop-request, phase: response}]", "phase applies to delay and reset only"},
		{"bad phase", "name: x\nrules: [{action: delay, phase: sideways, duration: 1s}]", `phase "sideways"`},
		{"window backwards", "name: x\nrules: [{action: reset, after: 5s, until: 2s}]", "must be later than after"},
		{"blackhole forever", "name: x\nrules: [{action: blackhole}]", "blackhole needs a duration"},
		{"clock blackhole with apis", "name: x\nrules: [{action: blackhole, apis: [Fetch], duration: 1s}]", "apis does not apply"},
		{"bad duration", "name: x\nrules: [{action: delay, duration: soon}]", `duration "soon"`},
		{"unknown key", "name: x\nrules: [{action: reset, probabilty: 0.1}]", "probabilty"},
		{"no name", "seed: 1", "a plan needs a name"},
		{"process action", "name: x\nprocesses: [{action: nuke, down: 1s}]", `action "nuke"`},
		{"process without down", "name: x\nprocesses: [{action: kill-restart}]", "needs down > 0"},
		{"negative broker", "name: x\nprocesses: [{action: pause, broker: -1, down: 1s}]", "broker -1"},
		{"slow-follower without network", "name: x\nprocesses: [{action: slow-follower, down: 1s}]", "slow-follower needs a network"},
		{"slow-follower with a null network", "name: x\nprocesses: [{action: slow-follower, down: 1s, network: }]", "slow-follower needs a network"},
		{"slow-follower with a broker", "name: x\nprocesses: [{action: slow-follower, broker: 1, down: 1s, network: {delay: 1ms}}]", "leave broker out"},
		{"slow-follower with a bad network", "name: x\nprocesses: [{action: slow-follower, down: 1s, network: {delay: 1ms, jitter: 5ms}}]",
			"network delay 1ms ±5ms uniform: uniform jitter 5ms exceeds the delay 1ms"},
		{"slow-follower with a loss above 1", "name: x\nprocesses: [{action: slow-follower, down: 1s, network: {loss: 2}}]", "loss 2 is outside [0, 1]"},
		{"slow-follower with a bad rate", "name: x\nprocesses: [{action: slow-follower, down: 1s, network: {rate: fast}}]", `rate "fast"`},
		{"slow-follower with an unknown network key", "name: x\nprocesses: [{action: slow-follower, down: 1s, network: {latency: 1ms}}]", "latency"},
		{"network on a pause", "name: x\nprocesses: [{action: pause, down: 1s, network: {delay: 1ms}}]", "network applies to slow-follower, not pause"},
		{"network on a broker-partition", "name: x\nprocesses: [{action: broker-partition, down: 1s, network: {}}]",
			"network applies to slow-follower, not broker-partition"},
		{"client action", "name: x\nclients: [{action: panic}]", `action "panic"`},
		{"zombie without pause", "name: x\nclients: [{action: zombie-producer}]", "needs pause"},
		{"negative count", "name: x\nclients: [{action: consumer-crash, count: -1}]", "count -1"},
		{"churn without workers", "name: x\nclients: [{action: group-churn, count: 1, phases: [range]}]", "needs workers >= 1"},
		{"churn without phases", "name: x\nclients: [{action: group-churn, count: 1, workers: 1}]", "needs phases"},
		{"unbounded churn", "name: x\nclients: [{action: group-churn, every: 1s, workers: 1, phases: [range]}]", "needs count >= 1"},
		{"churn waves without a period", "name: x\nclients: [{action: group-churn, count: 3, workers: 1, phases: [range]}]", "needs every > 0"},
		{"unknown balancer", "name: x\nclients: [{action: group-churn, count: 1, workers: 1, phases: [roundabout]}]", `phase "roundabout"`},
		{"more phases than waves", "name: x\nclients: [{action: group-churn, count: 1, every: 1s, workers: 1, phases: [range, sticky, roundrobin]}]", "cannot cover 3 phases"},
		{"negative leave_after", "name: x\nclients: [{action: group-churn, count: 1, workers: 1, leave_after: [-1], phases: [range]}]", "leave_after -1"},
		{"too many churn workers", "name: x\nclients: [{action: group-churn, count: 9, every: 1s, workers: 4, leave_after: [0, 1, 2], phases: [range], stages: 2}]", "more than 64"},
		{"too many stages", "name: x\nclients: [{action: group-churn, count: 1, workers: 1, phases: [range], stages: 4}]", "stages 4"},
		{"churn fields on a crash", "name: x\nclients: [{action: consumer-crash, workers: 2}]", "apply to group-churn"},
		{"pause on churn", "name: x\nclients: [{action: group-churn, count: 1, workers: 1, phases: [range], pause: 1s}]", "do not apply to group-churn"},
		{"negative plan duration", "name: x\nduration: -1s", "duration: -1s is negative"},
		{"negative plan partitions", "name: x\npartitions: -2", "partitions: -2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParsePlan([]byte(c.yaml))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
			t.Log(err)
		})
	}
	if _, err := LoadPlan("no-such-plan"); err == nil || !strings.Contains(err.Error(), "not one of the shipped plans") {
		t.Fatalf("unknown plan: %v", err)
	}
	if _, err := New(Config{Upstreams: []string{"127.0.0.1:1"}, Rules: []Rule{{Action: "explode"}}}); err == nil ||
		!strings.Contains(err.Error(), "rule 0") {
		t.Fatalf("proxy with an invalid rule: %v", err)
	}
}
