package loadgen

import (
	"context"
	"fmt"
	"strconv"
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
	"github.com/exactly-eos/exactly/loadgen/verify"
)

// The runner's side of the share-group mode: the group's configuration,
// its consumers (in process, each in a slot a crashed or departed
// consumer's replacement takes over), the consumer-crash and group-churn
// schedules acting on them, whether the target serves share groups at all,
// and the share check.

// Share-group defaults (ApplicationSpec's zero values).
const (
	defaultShareReleaseEvery  = 1000
	defaultShareLockDuration  = 15 * time.Second
	defaultShareDeliveryLimit = 5
)

// ShareReader is the Check.Reader of the share check.
const ShareReader = "share-group"

func (plan runPlan) shareReleaseEvery() int64 {
	if every := plan.workload.Application.ShareReleaseEvery; every > 0 {
		return every
	}
	return defaultShareReleaseEvery
}

func (plan runPlan) shareLockDuration() time.Duration {
	if lock := plan.workload.Application.ShareLockDuration; lock > 0 {
		return time.Duration(lock)
	}
	return defaultShareLockDuration
}

func (plan runPlan) shareDeliveryLimit() int {
	if limit := plan.workload.Application.ShareDeliveryLimit; limit > 0 {
		return limit
	}
	return defaultShareDeliveryLimit
}

// sharesGroup reports whether plan's mode consumes in a share group.
func (plan runPlan) sharesGroup() bool { return plan.spec().Stage == modes.ShareStage }

// shareNotApplicable says why the target cannot run a share group, or
// "": a broker must advertise ShareFetch and ShareAcknowledge v2 (KIP-932
// as Kafka 4.1 ships it, what franz-go's share consumer speaks) and
// ShareGroupHeartbeat.
func shareNotApplicable(ctx context.Context, admin *kgo.Client) string {
	versionsCtx, cancel := context.WithTimeout(ctx, preflightTimeout)
	defer cancel()
	response, err := kmsg.NewPtrApiVersionsRequest().RequestWith(versionsCtx, admin)
	if err != nil {
		return "not-applicable (the target did not answer ApiVersions, so whether it serves share groups is unknown: " + err.Error() + ")"
	}
	return shareSupport(response.ApiKeys)
}

// shareSupport is shareNotApplicable's verdict on advertised versions.
func shareSupport(keys []kmsg.ApiVersionsResponseApiKey) string {
	versions := map[int16]int16{}
	for _, key := range keys {
		versions[key.ApiKey] = key.MaxVersion
	}
	var missing []string
	for _, want := range []struct {
		key     kmsg.Key
		version int16
	}{{kmsg.ShareGroupHeartbeat, 1}, {kmsg.ShareFetch, 2}, {kmsg.ShareAcknowledge, 2}} {
		if version, ok := versions[int16(want.key)]; !ok || version < want.version {
			missing = append(missing, fmt.Sprintf("%s v%d", want.key.Name(), want.version))
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return "not-applicable (the target does not serve share groups: no " + orList(missing) + " in its ApiVersions)"
}

// setShareGroupConfigs sets the run's share group's configuration before
// its consumers join: earliest (records written before a consumer joins
// are delivered), the acquisition lock and the delivery limit.
func setShareGroupConfigs(ctx context.Context, admin *kgo.Client, plan runPlan) error {
	request := kmsg.NewPtrIncrementalAlterConfigsRequest()
	resource := kmsg.NewIncrementalAlterConfigsRequestResource()
	resource.ResourceType = kmsg.ConfigResourceTypeGroupConfig
	resource.ResourceName = plan.groupID()
	for _, config := range [][2]string{
		{"share.auto.offset.reset", "earliest"},
		{"share.record.lock.duration.ms", strconv.FormatInt(plan.shareLockDuration().Milliseconds(), 10)},
		{"share.delivery.count.limit", strconv.Itoa(plan.shareDeliveryLimit())},
	} {
		entry := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		entry.Name, entry.Op, entry.Value = config[0], kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(config[1])
		resource.Configs = append(resource.Configs, entry)
	}
	request.Resources = append(request.Resources, resource)
	setCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	response, err := request.RequestWith(setCtx, admin)
	if err != nil {
		return fmt.Errorf("share group configs: %w", err)
	}
	for _, resource := range response.Resources {
		if err := kerr.ErrorForCode(resource.ErrorCode); err != nil {
			message := ""
			if resource.ErrorMessage != nil {
				message = ": " + *resource.ErrorMessage
			}
			return fmt.Errorf("share group configs of %s: %w%s", plan.groupID(), err, message)
		}
	}
	return nil
}

// shareStage is a run's share consumers: one slot per consumer, whose
// consumer a crashed or departed one's replacement takes over.
type shareStage struct {
	l       *loadRun
	group   *stages.Group
	ctx     context.Context
	mu      sync.Mutex
	slots   []*stages.ShareConsumer
	started []int // consumers started per slot
	running sync.WaitGroup
}

// startShareStage sets the group's configuration and starts the plan's
// share consumers; under consumer-crash or group-churn its Schedule acts
// on them.
func startShareStage(ctx context.Context, l *loadRun) (*stages.Group, error) {
	plan := l.plan
	if err := setShareGroupConfigs(ctx, l.admin, plan); err != nil {
		return nil, err
	}
	workers := plan.workload.Pipeline.Workers
	crash, crashing := clientAction(plan.faults, faults.ClientConsumerCrash)
	churn, churning := clientAction(plan.faults, faults.ClientGroupChurn)
	horizon := time.Duration(plan.workload.Warmup + plan.workload.Duration)
	// Every consumer that may start can fail once.
	replacements := 0
	if crashing {
		replacements += len(crash.Times(horizon))
	}
	if churning {
		replacements += len(churn.Times(horizon))
	}
	group, ctx := stages.NewChurningGroup(ctx, workers, workers+replacements)
	s := &shareStage{l: l, group: group, ctx: ctx, slots: make([]*stages.ShareConsumer, workers), started: make([]int, workers)}
	for index := range workers {
		if err := s.start(index); err != nil {
			group.Cancel()
			s.running.Wait()
			group.Finish()
			return nil, err
		}
		group.Watch.Set(index, plan.workload.Partitions)
	}
	go func() {
		<-ctx.Done()
		s.running.Wait()
		group.Finish()
	}()
	switch {
	case crashing:
		group.Schedule = func() { s.schedule(crash, true) }
	case churning:
		group.Schedule = func() { s.schedule(churn, false) }
	}
	return group, nil
}

// start starts a consumer in slot index (its first, or a replacement).
func (s *shareStage) start(index int) error {
	plan := s.l.plan
	s.mu.Lock()
	s.started[index]++
	generation := s.started[index]
	s.mu.Unlock()
	clientID := fmt.Sprintf("exactly-loadgen-%s-share-%d", plan.topicSuffix, index)
	if generation > 1 {
		clientID += fmt.Sprintf("-%d", generation)
	}
	options := []kgo.Opt{kgo.SeedBrokers(plan.clientBootstrap...)}
	options = append(options, plan.security.SASLOptions()...)
	if hasFaults(plan.faults) {
		options = append(options, kgo.MetadataMinAge(faultMetadataMinAge), kgo.RetryBackoffFn(faultRetryBackoff))
	}
	consumer, err := stages.NewShareConsumer(stages.ShareSpec{Options: options, TLS: plan.security.TLSConfig, ClientID: clientID,
		Group: plan.groupID(), Input: plan.topic, ReleaseEvery: uint64(plan.shareReleaseEvery())},
		plan.shareLog, stageMetrics{s.l.metrics}, &s.group.Committed)
	if err != nil {
		return fmt.Errorf("share consumer %d: %w", index, err)
	}
	s.mu.Lock()
	s.slots[index] = consumer
	s.mu.Unlock()
	s.running.Add(1)
	go func() {
		defer s.running.Done()
		if err := consumer.Work(s.ctx); err != nil {
			s.group.Fail(fmt.Errorf("share consumer %s: %w", consumer.Name(), err))
		}
	}()
	return nil
}

// schedule crashes (or, for churn, takes out of the group) one consumer
// at each firing of action before the load's deadline, round robin over
// the slots, and starts its replacement: after RestartAfter for a crash,
// at once for churn (a member leaves, another joins).
func (s *shareStage) schedule(action faults.ClientAction, crash bool) {
	l := s.l
	horizon := time.Duration(l.plan.workload.Warmup + l.plan.workload.Duration)
	for fired, at := range action.Times(horizon) {
		if !wait.Until(s.ctx, l.start.Add(at)) {
			return
		}
		index := fired % len(s.slots)
		s.mu.Lock()
		victim := s.slots[index]
		s.mu.Unlock()
		if crash {
			victim.Crash()
		} else {
			victim.Leave()
		}
		select {
		case <-victim.Done():
		case <-s.ctx.Done():
			return
		}
		if crash {
			l.env.log.Record(faults.Event{Broker: "client", Kind: faults.KindConsumerCrash, APIKey: faults.NoAPIKey,
				Detail: fmt.Sprintf("share consumer %s killed between its poll and its acknowledgements, holding %d records; replacement in %s",
					victim.Name(), victim.Held(), action.RestartAfter)})
			if !wait.Until(s.ctx, time.Now().Add(time.Duration(action.RestartAfter))) {
				return
			}
		} else {
			l.env.log.Record(faults.Event{Broker: "client", Kind: faults.KindGroupLeave, APIKey: faults.NoAPIKey,
				Detail: fmt.Sprintf("share consumer %s left the group holding %d records of its last poll (its close released them)",
					victim.Name(), victim.Held())})
		}
		if err := s.start(index); err != nil {
			l.env.note("%s at %s: replacement of share consumer %d: %v", action.Action, at, index, err)
			continue
		}
		if !crash {
			s.mu.Lock()
			joined := s.slots[index].Name()
			s.mu.Unlock()
			l.env.log.Record(faults.Event{Broker: "client", Kind: faults.KindGroupJoin, APIKey: faults.NoAPIKey,
				Detail: "share consumer " + joined + " joined the group"})
		}
	}
}

// verifyShare judges the run's share log: the share check among the run's
// checks, its figures in run.ShareGroup, its offenders by kind.
func verifyShare(plan runPlan, ledger *verify.Ledger, run *report.Run, offenders map[string][]string) *pendingCheck {
	counts, named := verify.CheckShare(ledger, plan.shareLog, int32(plan.shareDeliveryLimit()))
	run.ShareGroup = &report.ShareGroupRun{ShareCounts: counts, Consumers: plan.workload.Pipeline.Workers,
		ReleaseEvery: plan.shareReleaseEvery(), LockDurationMillis: plan.shareLockDuration().Milliseconds(),
		ArchivedRecords: named[verify.OffenderArchived]}
	// Lost and accepted-twice records count as the lost and duplicated
	// of the share check; the other failures are judged from the
	// figures.
	for kind, as := range map[string]string{verify.OffenderShareLost: verify.OffenderLost, verify.OffenderDuplicateAccepted: verify.OffenderDuplicated,
		verify.OffenderPhantom: verify.OffenderPhantom, verify.OffenderAfterAccept: verify.OffenderAfterAccept,
		verify.OffenderAboveLimit: verify.OffenderAboveLimit} {
		for _, example := range named[kind] {
			offenders[as] = append(offenders[as], ShareReader+": "+example)
		}
	}
	check := &pendingCheck{Check: report.Check{Reader: ShareReader, Topic: plan.topic, Complete: true,
		Counts: verify.Counts{Read: counts.Delivered, Unique: counts.Accepted, Lost: counts.Lost, Unseen: counts.Lost,
			Duplicated: counts.DuplicateAccepted, Phantom: counts.Phantom, Foreign: counts.Foreign}},
		isolation: verify.ReadCommitted, label: ShareReader}
	if counts.AfterAccept > 0 {
		check.notes = append(check.notes, fmt.Sprintf("%d %s", counts.AfterAccept, verify.ViolationAfterAccept))
	}
	if counts.AboveLimit > 0 {
		check.notes = append(check.notes, fmt.Sprintf("%d %s", counts.AboveLimit, verify.ViolationAboveLimit))
	}
	return check
}
