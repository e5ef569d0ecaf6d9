package loadgen

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/internal/wait"
	"github.com/exactly-eos/exactly/loadgen/faults"
	"github.com/exactly-eos/exactly/loadgen/modes"
	"github.com/exactly-eos/exactly/loadgen/report"
	"github.com/exactly-eos/exactly/loadgen/stages"
)

// The group-churn fault (faults.GroupChurn) runs a consume stage as
// in-process workers that join the stage's group in waves and leave it:
// no worker is killed, each leaves the way an application does, after
// ending its open transaction with an abort. The stage is the mode's own
// (its modes.Spec's Stage): transact workers (GroupTransactSession), a
// database stage, or, for a mode without a stage, a relay. The workers'
// loops (stages.Group.Transact, DBStage.Work, Relay.Work) consult a
// stages.Departure between polls.

// churnSessionTimeout is the workers' session timeout, as TestTxnEtl's.
const churnSessionTimeout = 20 * time.Second

// churnPhaseEndTimeout bounds the wait for a phase's workers to leave
// before a wave with another balancer joins.
const churnPhaseEndTimeout = 30 * time.Second

// churnWorker is one worker of a group-churn run.
type churnWorker struct {
	stage      *churnStage
	index      int // within its stage
	wave       faults.ChurnWave
	leaveAfter int // -1: stays until its phase ends
	instanceID string
	leave      chan struct{} // closed when its phase ends
	exited     chan struct{} // closed once it left the group
}

// name is the worker in the event log: w<index>, with its stage in a chain.
func (w *churnWorker) name() string {
	if w.stage.run.chained() {
		return fmt.Sprintf("s%d/w%d", w.stage.number, w.index)
	}
	return fmt.Sprintf("w%d", w.index)
}

// role says what the worker does, for the event log.
func (w *churnWorker) role() string {
	if w.leaveAfter < 0 {
		return w.name() + " stays"
	}
	return fmt.Sprintf("%s leaves after %d commits", w.name(), w.leaveAfter)
}

func (w *churnWorker) requestedToLeave() bool {
	select {
	case <-w.leave:
		return true
	default:
		return false
	}
}

// churnStage is one consume stage of a group-churn run: a group reading
// input (and, in a chain, writing output, whose records carry the stage's
// number). mu guards phase.
type churnStage struct {
	run                  *churnRun
	number               int // 1-based
	group, input, output string

	mu    sync.Mutex
	phase []*churnWorker // the workers of the current phase
	// timeline is the group's commits and churn events, for its
	// rebalance pauses (rebalancePauses).
	timeline commitTimeline
}

// churnRun runs a run's consume stages under group-churn. Its schedule
// goroutine joins waves and ends phases; each worker runs on its own
// goroutine. mu guards stopping; wait counts the workers and the schedule.
type churnRun struct {
	l       *loadRun
	action  faults.ClientAction
	waves   []faults.ChurnWave
	p       *stages.Group
	ctx     context.Context
	perWave int
	stages  []*churnStage

	mu       sync.Mutex
	stopping bool
	wait     sync.WaitGroup
}

// startChurnStage starts wave 0 of each of plan's consume stages under
// action; the returned pipeline's schedule joins the other waves once the
// load's clock runs, and its committed counts the distinct records the
// last stage committed.
func startChurnStage(ctx context.Context, l *loadRun, action faults.ClientAction) (*stages.Group, error) {
	plan := l.plan
	horizon := time.Duration(plan.workload.Warmup + plan.workload.Duration)
	perWave := action.Workers + len(action.LeaveAfter)
	topics := plan.stageTopics()
	stageCount := chainedStages(plan.faults, plan.mode)
	p, ctx := stages.NewChurningGroup(ctx, perWave*stageCount, faults.MaxChurnWorkers+1)
	p.Identities = stages.NewIdentityCounter(p.Committed)
	r := &churnRun{l: l, action: action, waves: action.Waves(horizon), p: p, ctx: ctx, perWave: perWave}
	l.churn = r
	for number := 1; number <= stageCount; number++ {
		stage := &churnStage{run: r, number: number, group: plan.groupID(), input: plan.topic}
		if number > 1 {
			stage.group, stage.input = fmt.Sprintf("%s-s%d", plan.groupID(), number), topics[number-1]
		}
		if len(topics) > number {
			stage.output = topics[number]
		}
		r.stages = append(r.stages, stage)
	}
	for _, stage := range r.stages {
		stage.join(r.waves[0])
	}
	p.Schedule = r.schedule
	go func() {
		<-ctx.Done()
		r.mu.Lock()
		r.stopping = true
		r.mu.Unlock()
		r.wait.Wait()
		p.Finish()
	}()
	return p, nil
}

// chained reports whether the run has more than one stage.
func (r *churnRun) chained() bool { return len(r.stages) > 1 }

// schedule joins each wave after the first at its time, ending the phase
// before it first when the wave opens a new phase. In a chain, stage k's
// waves come (k-1)/stages of a period later than stage 1's, so a stage
// is consuming, not rebalancing, while the stage before it aborts and
// leaves — as in TestTxnEtl, where the stages' churn drifts apart.
func (r *churnRun) schedule() {
	if !r.track() {
		return
	}
	defer r.wait.Done()
	type joining struct {
		at    time.Duration
		stage *churnStage
		wave  faults.ChurnWave
	}
	var plan []joining
	for _, wave := range r.waves[1:] {
		for _, stage := range r.stages {
			offset := time.Duration(r.action.Every) * time.Duration(stage.number-1) / time.Duration(len(r.stages))
			plan = append(plan, joining{wave.At + offset, stage, wave})
		}
	}
	slices.SortStableFunc(plan, func(a, b joining) int { return cmp.Compare(a.at, b.at) })
	for _, next := range plan {
		if !wait.Until(r.ctx, r.l.start.Add(next.at)) {
			return
		}
		next.stage.advance(next.wave)
	}
}

// advance joins wave in the stage; a wave that opens a phase first asks
// the previous phase's workers to abort and leave: before it joins when
// the balancer changes (a group changes protocol only once empty), after
// it joined when not (always under the consumer protocol, where the
// broker's assignor serves every phase).
func (s *churnStage) advance(wave faults.ChurnWave) {
	if !wave.FirstOfPhase {
		s.join(wave)
		return
	}
	s.mu.Lock()
	ending := s.phase
	s.phase = nil
	s.mu.Unlock()
	sameAssignor := len(ending) > 0 && (ending[0].wave.Phase.Balancer == wave.Phase.Balancer ||
		s.run.l.plan.groupProtocol() == GroupProtocolConsumer) // the broker's assignor, whatever the phase
	if sameAssignor {
		s.join(wave)
		s.run.endPhase(ending, false)
		return
	}
	s.run.endPhase(ending, true)
	s.join(wave)
}

// track counts a goroutine in wait unless the run is stopping.
func (r *churnRun) track() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopping {
		return false
	}
	r.wait.Add(1)
	return true
}

// join starts a wave's workers in the stage: Workers that stay, then one
// per LeaveAfter entry.
func (s *churnStage) join(wave faults.ChurnWave) {
	r := s.run
	leaveAfter := make([]int, 0, r.perWave)
	for range r.action.Workers {
		leaveAfter = append(leaveAfter, -1)
	}
	leaveAfter = append(leaveAfter, r.action.LeaveAfter...)
	var roles []string
	for offset, commits := range leaveAfter {
		worker := &churnWorker{stage: s, index: wave.Index*r.perWave + offset, wave: wave, leaveAfter: commits,
			leave: make(chan struct{}), exited: make(chan struct{})}
		if wave.Phase.Static {
			worker.instanceID = fmt.Sprintf("exactly-%s-%s-s%d-w%d", r.l.plan.runIDText, r.l.plan.topicSuffix, s.number, worker.index)
		}
		if !r.track() {
			return
		}
		s.mu.Lock()
		s.phase = append(s.phase, worker)
		s.mu.Unlock()
		go func() {
			defer r.wait.Done()
			defer close(worker.exited)
			if err := s.runWorker(worker); err != nil {
				r.p.Fail(fmt.Errorf("group-churn worker %s: %w", worker.name(), err))
			}
		}()
		roles = append(roles, worker.role())
	}
	if wave.Index > 0 {
		s.timeline.event(time.Now())
		where := ""
		if r.chained() {
			where = fmt.Sprintf(" stage %d", s.number)
		}
		r.l.env.log.Record(faults.Event{Broker: "client", Kind: faults.KindGroupJoin, APIKey: faults.NoAPIKey,
			Detail: fmt.Sprintf("wave %d (%s) joined%s: %s", wave.Index, wave.Phase.Name, where, strings.Join(roles, ", "))})
	}
}

// endPhase asks a phase's workers to end their open transaction with an
// abort and leave; wait says whether to wait until they have.
func (r *churnRun) endPhase(workers []*churnWorker, wait bool) {
	for _, worker := range workers {
		close(worker.leave)
	}
	if !wait {
		return
	}
	deadline := time.NewTimer(churnPhaseEndTimeout)
	defer deadline.Stop()
	for _, worker := range workers {
		select {
		case <-worker.exited:
		case <-deadline.C:
			r.l.env.note("group-churn: worker %s had not left %s after its phase ended; the next wave joins anyway", worker.name(), churnPhaseEndTimeout)
			return
		case <-r.ctx.Done():
			return
		}
	}
}

// runWorker runs one worker in the run's mode until it leaves or the run
// stops, then removes a static member from the group as Kafka's admin
// does (a static member closing does not leave).
func (s *churnStage) runWorker(worker *churnWorker) error {
	r := s.run
	plan, metrics, ctx := r.l.plan, r.l.metrics, r.ctx
	options := churnGroupOptions(worker.wave.Phase, worker.instanceID, plan.groupProtocol())
	leave := &stages.Departure{AfterCommits: worker.leaveAfter, Leave: worker.leave,
		OnLeft: func(records, commits int) { r.left(worker, records, commits) }}
	last := s.number == len(r.stages)
	leave.OnCommitted = func(fetches kgo.Fetches) {
		s.timeline.commit(time.Now())
		if last {
			r.p.Identities.Commit(fetches)
		}
	}
	var onAssignment func(int)
	if worker.index < r.perWave {
		slot := (s.number-1)*r.perWave + worker.index
		onAssignment = func(count int) { r.p.Watch.Set(slot, count) }
	}
	var err error
	switch stage := plan.spec().Stage; {
	case stage == modes.TransactStage:
		spec := plan.sessionSpec(worker.index)
		spec.Options, spec.OnAssignment = append(spec.Options, options...), onAssignment
		spec.Group, spec.Input = s.group, s.input
		spec.ClientID = fmt.Sprintf("exactly-loadgen-pipeline-s%d-%d", s.number, worker.index)
		spec.TransactionalID = fmt.Sprintf("exactly-%s-%s-s%d-w%d", plan.runIDText, plan.topicSuffix, s.number, worker.index)
		var session *kgo.GroupTransactSession
		if session, err = stages.NewSession(spec, stageMetrics{metrics}); err == nil {
			err = r.p.Transact(ctx, session, stages.Output{Topic: s.output, Stage: uint8(s.number)}, stageMetrics{metrics}, leave)
		}
	case stage.UsesDatabase():
		spec := plan.dbStageSpec(worker.index)
		spec.Options, spec.OnAssignment = append(spec.Options, options...), onAssignment
		var stage *stages.DBStage
		if stage, err = stages.NewDBStage(spec, plan.appDB, stageMetrics{metrics}, r.l.stats); err == nil {
			stage.OnCommit = func(rows int64, sendTimes []int64, took time.Duration) {
				now := time.Now()
				for _, sendTime := range sendTimes {
					metrics.recordEndToEnd(time.Unix(0, sendTime), now)
				}
				metrics.recordTransactionEnd(true, false, took)
			}
			err = stage.Work(ctx, leave)
		}
	case relays(plan.faults, plan.mode):
		spec := plan.relaySpec(worker.index)
		spec.Options, spec.OnAssignment = append(spec.Options, options...), onAssignment
		var relayWorker *stages.Relay
		if relayWorker, err = stages.NewRelay(spec, stageMetrics{metrics}); err == nil {
			err = relayWorker.Work(ctx, leave)
		}
	default:
		err = fmt.Errorf("mode %s has no consume stage", plan.mode)
	}
	if worker.instanceID != "" {
		leaveStatic(r.l.admin, s.group, worker.instanceID, metrics)
	}
	return err
}

// left records a worker's departure.
func (r *churnRun) left(worker *churnWorker, records, commits int) {
	worker.stage.timeline.event(time.Now())
	how := "left the group"
	if worker.instanceID != "" {
		how = "left the group (LeaveGroup with instance id " + worker.instanceID + ")"
	}
	why := fmt.Sprintf("after %d commits", commits)
	if worker.requestedToLeave() {
		why = fmt.Sprintf("at the end of its phase, after %d commits", commits)
	}
	what := fmt.Sprintf("aborted its open transaction of %d records and %s", records, how)
	if records == 0 {
		what = "had no transaction open and " + how
	} else {
		r.l.churnAborts.Add(1)
	}
	r.l.env.log.Record(faults.Event{Broker: "client", Kind: faults.KindGroupLeave, APIKey: faults.NoAPIKey,
		Detail: fmt.Sprintf("%s worker %s (wave %d, %s) %s, %s", r.l.plan.mode, worker.name(), worker.wave.Index,
			worker.wave.Phase.Name, what, why)})
}

// churnSettings adds a group-churn run's consume stage settings.
func churnSettings(plan runPlan, settings map[string]string) {
	action, ok := clientAction(plan.faults, faults.ClientGroupChurn)
	if !ok || !plan.spec().AcceptsClientFault(faults.ClientGroupChurn) {
		return
	}
	settings["group.churn"] = fmt.Sprintf("in-process workers join in waves (one with the stage, then %d every %s from %s; "+
		"each wave %d staying and one leaving after each of %v commits); a leaving worker aborts its open transaction and leaves "+
		"(static members: LeaveGroup by group.instance.id); balancer phases %s",
		action.Count, action.Every, action.After, action.Workers, action.LeaveAfter, strings.Join(action.Phases, ", "))
	settings["session.timeout.ms"] = strconv.FormatInt(churnSessionTimeout.Milliseconds(), 10)
	if plan.groupProtocol() == GroupProtocolConsumer {
		settings["group.churn"] += "; on the consumer protocol the phases keep only their static membership: the broker assigns " +
			"(server assignor " + ConsumerServerAssignor + "), and the session is the broker's group.consumer.session.timeout.ms"
		delete(settings, "session.timeout.ms")
	}
	if stageCount := chainedStages(plan.faults, plan.mode); stageCount > 1 {
		settings["pipeline.stages"] = fmt.Sprintf("%d chained (stage k reads stage k-1's output read_committed): %s",
			stageCount, strings.Join(plan.stageTopics(), " -> "))
	}
	if relays(plan.faults, plan.mode) {
		settings["relay"] = "a consumer group reads the input, produces each record to the output (acks=all, retries, " +
			"enable.idempotence=false), then commits the poll's offsets (enable.auto.commit=false)"
		settings["group.id"] = "exactly-<run id>-<run>"
	}
}

// groupID is the consume stage's group.
func (plan runPlan) groupID() string { return "exactly-" + plan.runIDText + "-" + plan.topicSuffix }

// churnGroupOptions are a churning worker's group settings: its phase's
// balancer (classic protocol only: under the consumer protocol the broker
// assigns, with groupProtocolOptions' assignor), TestTxnEtl's session
// timeout and, for a static member, its instance id.
func churnGroupOptions(phase faults.ChurnPhase, instanceID, protocol string) []kgo.Opt {
	balancers := map[string]kgo.GroupBalancer{"range": kgo.RangeBalancer(), "roundrobin": kgo.RoundRobinBalancer(),
		"sticky": kgo.StickyBalancer(), "cooperative-sticky": kgo.CooperativeStickyBalancer()}
	options := []kgo.Opt{kgo.SessionTimeout(churnSessionTimeout)}
	if protocol != GroupProtocolConsumer {
		options = append(options, kgo.Balancers(balancers[phase.Balancer]))
	}
	if instanceID != "" {
		options = append(options, kgo.InstanceID(instanceID))
	}
	return options
}

// leaveStatic removes a static member from group by its instance id, as
// Kafka's admin (kafka-consumer-groups --delete-members) does: a classic
// static member's own close leaves its session to time out.
func leaveStatic(admin *kgo.Client, group, instanceID string, metrics *runMetrics) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	request := kmsg.NewPtrLeaveGroupRequest()
	request.Group = group
	member := kmsg.NewLeaveGroupRequestMember()
	member.InstanceID = &instanceID
	member.Reason = kmsg.StringPtr("exactly loadgen group-churn: the worker left")
	request.Members = append(request.Members, member)
	response, err := request.RequestWith(ctx, admin)
	if err == nil {
		err = errors.Join(kerr.ErrorForCode(response.ErrorCode), memberErrors(response.Members))
	}
	if err != nil {
		metrics.recordError(fmt.Errorf("leave group %s as %s: %w", group, instanceID, err))
	}
}

func memberErrors(members []kmsg.LeaveGroupResponseMember) error {
	var errs []error
	for _, member := range members {
		errs = append(errs, kerr.ErrorForCode(member.ErrorCode))
	}
	return errors.Join(errs...)
}

// rebalancePauses are the run's rebalance pauses, once its workers
// stopped: nil without group-churn.
func (l *loadRun) rebalancePauses() *report.RebalancePauses {
	if l.churn == nil {
		return nil
	}
	var timelines []*commitTimeline
	for _, stage := range l.churn.stages {
		timelines = append(timelines, &stage.timeline)
	}
	window := time.Duration(l.churn.action.Every)
	if window <= 0 { // a single wave: the rest of the load
		window = l.deadline.Sub(l.start)
	}
	return summarizePauses(timelines, l.start, l.deadline, window)
}
