package faults

import (
	"slices"
	"testing"
	"time"
)

// A group-churn action's waves: wave 0 with the stage, then one per
// firing; the planned waves split evenly, in order, over the phases,
// each phase's first wave marked; a horizon that cuts the schedule drops
// the last phases instead of squeezing them.
func TestGroupChurnWaves(t *testing.T) {
	t.Parallel()
	plan, err := ParsePlan([]byte(`
name: churn
clients:
  - action: group-churn
    after: 2s
    every: 2s
    count: 5
    workers: 1
    leave_after: [0, 2]
    phases: [cooperative-sticky, cooperative-sticky-static, range]
    stages: 2
`))
	if err != nil {
		t.Fatal(err)
	}
	action := plan.Clients[0]
	if action.ChainedStages() != 2 || !slices.Equal(action.LeaveAfter, []int{0, 2}) {
		t.Fatalf("decoded %+v", action.GroupChurn)
	}
	type row struct {
		at    time.Duration
		phase string
		first bool
	}
	var got []row
	for i, wave := range action.Waves(time.Minute) {
		if wave.Index != i {
			t.Fatalf("wave %d has index %d", i, wave.Index)
		}
		got = append(got, row{wave.At, wave.Phase.Name, wave.FirstOfPhase})
	}
	s := time.Second
	want := []row{{0, "cooperative-sticky", false}, {2 * s, "cooperative-sticky", false},
		{4 * s, "cooperative-sticky-static", true}, {6 * s, "cooperative-sticky-static", false},
		{8 * s, "range", true}, {10 * s, "range", false}}
	if !slices.Equal(got, want) {
		t.Fatalf("waves %v, want %v", got, want)
	}
	static := action.Waves(time.Minute)[2].Phase
	if !static.Static || static.Balancer != "cooperative-sticky" {
		t.Fatalf("cooperative-sticky-static parsed as %+v", static)
	}
	if cut := action.Waves(5 * time.Second); len(cut) != 3 || cut[2].Phase.Name != "cooperative-sticky-static" {
		t.Fatalf("a 5 s horizon keeps waves %+v, want 0 s, 2 s and 4 s in their planned phases", cut)
	}
}

// Every balancer a phase may name parses, with or without -static.
func TestParseChurnPhase(t *testing.T) {
	t.Parallel()
	for _, balancer := range ChurnBalancers {
		for _, static := range []bool{false, true} {
			name := balancer
			if static {
				name += "-static"
			}
			phase, err := ParseChurnPhase(name)
			if err != nil || phase.Balancer != balancer || phase.Static != static || phase.Name != name {
				t.Errorf("%s: %+v, %v", name, phase, err)
			}
		}
	}
	if _, err := ParseChurnPhase("static"); err == nil {
		t.Error(`"static" alone names no balancer, yet parsed`)
	}
}
