package loadgen

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/stages"
)

// The runner's side of the consume stages (package stages): each
// worker's settings from the run's plan, and the in-process start of a
// run's stage. Under consumer-crash the workers run as subprocesses
// (startWorkerPipeline), under group-churn in waves (startChurnStage).

// stageMetrics gives a stage the run's measurements.
type stageMetrics struct{ *runMetrics }

var _ stages.Metrics = stageMetrics{}

func (m stageMetrics) RecordError(err error) { m.recordError(err) }
func (m stageMetrics) RecordEndToEnd(sendTime, now time.Time) {
	m.recordEndToEnd(sendTime, now)
}
func (m stageMetrics) RecordTransactionEnd(committed, aborted bool, took time.Duration) {
	m.recordTransactionEnd(committed, aborted, took)
}
func (m stageMetrics) UnsupportedMode() string { return m.unsupportedMode() }
func (m stageMetrics) Logger() kgo.Logger      { return clientLogger{metrics: m.runMetrics} }

// sessionSpec is transact worker index's session settings in plan.
func (plan runPlan) sessionSpec(index int) stages.SessionSpec {
	return stages.SessionSpec{
		Options:            append(append(plan.clientOptions(), plan.observations.watch(consumersPipeline)), plan.groupOptions()...),
		ClientID:           fmt.Sprintf("exactly-loadgen-pipeline-%d", index),
		TransactionalID:    fmt.Sprintf("exactly-%s-%s-w%d", plan.runIDText, plan.topicSuffix, index),
		TransactionTimeout: time.Duration(plan.workload.Transaction.Timeout),
		Group:              "exactly-" + plan.runIDText + "-" + plan.topicSuffix,
		Input:              plan.topic,
	}
}

// pipelineSessionSpec is in-process transact worker index's session
// settings: a static group member (its transactional id as instance id),
// so the new session that replaces one whose transaction end went
// unanswered (stages.TransactRestarting) takes the old member's place at
// once. The old session could not leave the group while its coordinator's
// broker was down; as a dynamic member it would hold up the group's
// rebalance until its session timed out (45 s).
func (plan runPlan) pipelineSessionSpec(index int, p *stages.Group) stages.SessionSpec {
	spec := plan.sessionSpec(index)
	spec.InstanceID = spec.TransactionalID
	spec.OnAssignment = func(count int) { p.Watch.Set(index, count) }
	return spec
}

// startPipeline starts the in-process transact workers of plan.
func startPipeline(ctx context.Context, plan runPlan, metrics *runMetrics) (*stages.Group, error) {
	workers := plan.workload.Pipeline.Workers
	p, ctx := stages.NewGroup(ctx, workers)
	var sessions []*kgo.GroupTransactSession
	for index := range workers {
		spec := plan.pipelineSessionSpec(index, p)
		session, err := stages.NewSession(spec, stageMetrics{metrics})
		if err != nil {
			p.Cancel()
			for _, started := range sessions {
				started.Close()
			}
			return nil, fmt.Errorf("pipeline worker %d: %w", index, err)
		}
		sessions = append(sessions, session)
	}
	p.RunWorkers(workers, func(index int) error {
		spec := plan.pipelineSessionSpec(index, p)
		renew := func() (*kgo.GroupTransactSession, error) { return stages.NewSession(spec, stageMetrics{metrics}) }
		return p.TransactRestarting(ctx, sessions[index], renew, stages.Output{Topic: plan.outputTopic, Stage: 1}, stageMetrics{metrics})
	})
	return p, nil
}

// dbStageSpec returns database stage worker index's settings in plan.
func (plan runPlan) dbStageSpec(index int) stages.DBSpec {
	return stages.DBSpec{
		Mode: plan.mode, Options: append(append(plan.clientOptions(), plan.observations.watch(consumersDatabase)), plan.groupOptions()...),
		ClientID: fmt.Sprintf("exactly-loadgen-%s-consumer-%d", plan.topicSuffix, index),
		Group:    "exactly-" + plan.runIDText + "-" + plan.topicSuffix, Input: plan.topic, Run: plan.topic,
		Worker: fmt.Sprintf("w%d", index), Window: plan.workload.Application.DedupWindow,
	}
}

// startDBStage starts the in-process workers of plan's database stage.
func startDBStage(ctx context.Context, l *loadRun) (*stages.Group, error) {
	workers := l.plan.workload.Pipeline.Workers
	p, ctx := stages.NewGroup(ctx, workers)
	l.stats.Processed = stages.NewPositions() // the drain waits for the input's end
	var started []*stages.DBStage
	for index := range workers {
		spec := l.plan.dbStageSpec(index)
		spec.OnAssignment = func(count int) { p.Watch.Set(index, count) }
		stage, err := stages.NewDBStage(spec, l.plan.appDB, stageMetrics{l.metrics}, l.stats)
		if err != nil {
			p.Cancel()
			for _, other := range started {
				other.Close()
			}
			return nil, err
		}
		stage.OnCommit = func(rows int64, sendTimes []int64, took time.Duration) {
			now := time.Now()
			for _, sendTime := range sendTimes {
				l.metrics.recordEndToEnd(time.Unix(0, sendTime), now)
			}
			l.metrics.recordTransactionEnd(true, false, took)
			p.Committed.Add(rows)
		}
		started = append(started, stage)
	}
	p.RunWorkers(workers, func(index int) error { return started[index].Work(ctx, nil) })
	return p, nil
}

// relaySpec is relay worker index's settings in plan.
func (plan runPlan) relaySpec(index int) stages.RelaySpec {
	return stages.RelaySpec{Mode: plan.mode, Options: append(append(plan.clientOptions(), plan.observations.watch(consumersRelay)), plan.groupOptions()...),
		ClientID: fmt.Sprintf("exactly-loadgen-%s-relay-%d", plan.topicSuffix, index),
		Group:    plan.groupID(), Input: plan.topic, Output: plan.outputTopic}
}
