package loadgen

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/stages"
	"github.com/exactly-eos/exactly/loadgen/verify"
	"github.com/exactly-eos/exactly/loadgen/worker"
)

// startRemoteConsumers runs the workload's live consumers as worker
// processes (--workers), consumer i on partitions i, i+count, ... as in
// process: their polls go to the run's poll trackers, their end-to-end
// histograms into its metrics, their received counts into the returned
// consumers' counter. Cancelling them asks every worker to finish.
func startRemoteConsumers(ctx context.Context, l *loadRun, topic string, readCommitted bool) (*liveConsumers, error) {
	plan := l.plan
	partitions, count := plan.workload.Partitions, plan.workload.Consumers
	launch := workerLaunch(l.env.self, l.env.workers, plan.security)
	var processes []*worker.Process
	stopAll := func() {
		for _, process := range processes {
			process.Stop(15 * time.Second)
		}
	}
	consumers := &liveConsumers{received: stages.NewCounter(), done: make(chan struct{})}
	for index := range min(count, partitions) {
		spec := worker.Spec{Role: worker.RoleConsumer, Bootstrap: plan.clientBootstrap, Security: plan.security.Config(),
			FastRetries: hasFaults(plan.faults), ClientID: fmt.Sprintf("exactly-loadgen-consumer-%d", index),
			Topic: topic, ReadCommitted: readCommitted, WarmupEnd: l.metrics.warmupEndTime()}
		for partition := index; partition < partitions; partition += count {
			spec.Assigned = append(spec.Assigned, int32(partition))
		}
		isolation := verify.ReadUncommitted
		if readCommitted {
			isolation = verify.ReadCommitted
		}
		polls := plan.observations.group(consumersLive, topic, isolation).tracker(spec.ClientID + " (worker process)")
		process, err := worker.StartWith(launch, index, spec, worker.Handlers{
			Event: func(event worker.Event) { worker.ReplayPoll(polls, event) },
			Summary: func(summary worker.Summary) error {
				if _, err := l.metrics.mergeSummary(summary); err != nil {
					return err
				}
				consumers.received.Add(summary.Received)
				return nil
			},
		})
		if err != nil {
			stopAll()
			return nil, fmt.Errorf("live consumer %d: %w", index, err)
		}
		processes = append(processes, process)
	}
	for index, process := range processes {
		if err := process.WaitReady(ctx, 30*time.Second); err != nil {
			stopAll()
			return nil, fmt.Errorf("live consumer %d: %w", index, err)
		}
	}
	consumers.cancel = func() {
		stopAll()
		for index, process := range processes {
			if failure := process.Failure(); failure != "" {
				l.env.note("live consumer %d: %s", index, failure)
			}
		}
	}
	close(consumers.done) // cancel returns once every worker exited
	return consumers, nil
}

// runConsumerWorker is a live consumer in a worker process: it reads its
// partitions from the start until stdin closes, reporting its polls as
// events and, every second and at the end, a summary with its end-to-end
// histogram and the records it received.
func runConsumerWorker(ctx context.Context, spec worker.Spec, reporter *worker.Reporter, _ *worker.CrashPoint) error {
	metrics := newRunMetrics(spec.WarmupEnd)
	options, err := workerClientOptions(spec)
	if err != nil {
		return err
	}
	assignment := make(map[int32]kgo.Offset, len(spec.Assigned))
	for _, partition := range spec.Assigned {
		assignment[partition] = kgo.NewOffset().AtStart()
	}
	level := kgo.ReadUncommitted()
	if spec.ReadCommitted {
		level = kgo.ReadCommitted()
	}
	client, err := kgo.NewClient(append(options, workerPollWatch(reporter), kgo.ClientID(spec.ClientID),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{spec.Topic: assignment}),
		kgo.FetchIsolationLevel(level), kgo.FetchMaxWait(100*time.Millisecond))...)
	if err != nil {
		return fmt.Errorf("live consumer %s: %w", spec.ClientID, err)
	}
	defer client.Close()
	reporter.Emit(worker.Event{Event: "ready"})
	received := stages.NewCounter()
	var reported int64
	summarize := func(final bool) {
		summary := metrics.takeSummary()
		now := received.Load()
		summary.Received, reported = now-reported, now
		summary.Final = final
		reporter.Summary(summary)
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		ticker := time.NewTicker(summaryInterval)
		defer ticker.Stop()
		for {
			select {
			case <-done:
				return
			case <-ticker.C:
				summarize(false)
			}
		}
	}()
	consumeForLatency(ctx, client, metrics, &received)
	close(done)
	<-stopped
	summarize(true)
	if errors.Is(ctx.Err(), context.Canceled) {
		return nil // stdin closed: the runner is done with it
	}
	return ctx.Err()
}
