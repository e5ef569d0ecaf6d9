package loadgen

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/exactly-eos/exactly/loadgen/faults"
	"github.com/exactly-eos/exactly/loadgen/modes"
	"github.com/exactly-eos/exactly/loadgen/report"
	"github.com/exactly-eos/exactly/loadgen/verify"
)

// bound is what a count may show.
type bound uint8

const (
	mustBeZero bound = iota
	mayBePositive
)

// sign is what a run must show for its fault to count as having acted;
// without it the run is untestable, not a pass.
type sign uint8

const (
	signNone            sign = iota // no faults: nothing to show
	signFaultFired                  // at least one fault fired
	signDuplicates                  // duplicates appeared (acks lost without idempotence)
	signZombieWrites                // a fenced zombie producer tried to write
	signConsumerCrash               // a pipeline worker was killed
	signProcessFault                // a broker was killed, paused, cut off or slowed
	signGroupChurn                  // a wave joined mid-run and a worker aborted a transaction to leave
	signChurnDuplicates             // signGroupChurn, and duplicates appeared (a relay)
	signShareChurn                  // a share consumer left holding records and another joined
)

// expectation is one cell of the expectations table: the bounds a delivery
// mode must keep under a fault plan.
type expectation struct {
	lost, duplicated, reordered bound
	sign                        sign
	// note adds what the bounds do not say (a dedup window's reach).
	note string
}

// expectationFor is the expectations table: a cell's bounds are its
// mode's (modes.Spec.Expect; each mode's file says why). Without faults
// every mode must deliver each acknowledged record exactly once, in
// order. Under faults the mode's UnderFaults bounds hold, and the run
// must show that its fault acted: a fault fired, or the sharper sign of
// the plan's client fault (a zombie tried to write, a consume worker was
// killed, a wave joined and a worker aborted to leave), duplicates for a
// mode whose retries duplicate under lost Produce acks and for a relay
// under group-churn (each worker that leaves has produced the poll it did
// not commit, which the partition's next owner produces again). Aborted
// or fenced records read under read_committed, and records nobody sent,
// are violations in every cell.
func expectationFor(plan faults.Plan, mode string) expectation {
	want := specOf(mode).Expect
	e := expectation{sign: signNone, note: want.Note}
	if !hasFaults(plan) {
		return e
	}
	e.sign = signFaultFired
	e.lost, e.duplicated, e.reordered = boundOf(want.UnderFaults.MayLose), boundOf(want.UnderFaults.MayDuplicate),
		boundOf(want.UnderFaults.MayReorder)
	if want.AckLossShowsDuplicates && dropsProduceAcks(plan) {
		e.sign = signDuplicates
	}
	switch {
	case hasClient(plan, faults.ClientZombieProducer):
		e.sign = signZombieWrites
	case hasClient(plan, faults.ClientConsumerCrash):
		e.sign = signConsumerCrash
	case relays(plan, mode):
		e.sign = signChurnDuplicates
	case hasClient(plan, faults.ClientGroupChurn) && specOf(mode).Stage == modes.ShareStage:
		e.sign = signShareChurn
	case hasClient(plan, faults.ClientGroupChurn):
		e.sign = signGroupChurn
	case plan.NeedsProcesses() && !plan.NeedsProxy():
		e.sign = signProcessFault
	}
	return e
}

// boundOf is mayBePositive when a count may be positive.
func boundOf(may bool) bound {
	if may {
		return mayBePositive
	}
	return mustBeZero
}

// dropsProduceAcks reports whether the plan swallows Produce responses
// after the broker wrote the batch.
func dropsProduceAcks(plan faults.Plan) bool {
	for _, rule := range plan.Rules {
		if rule.Action == faults.ActionDropResponse && (len(rule.APIs) == 0 || slices.Contains(rule.APIs, faults.APIKey(0))) {
			return true
		}
	}
	return false
}

func hasClient(plan faults.Plan, kind faults.ClientActionKind) bool {
	_, ok := clientAction(plan, kind)
	return ok
}

// describe states the expectation in words.
func (e expectation) describe() string {
	part := func(name string, b bound) string {
		if b == mustBeZero {
			return name + " = 0"
		}
		return name + " any"
	}
	text := strings.Join([]string{part("lost", e.lost), part("dup", e.duplicated), part("reord", e.reordered)}, ", ")
	if e.note != "" {
		text += " (" + e.note + ")"
	}
	switch e.sign {
	case signFaultFired:
		text += "; faults must fire"
	case signDuplicates:
		text += "; dup > 0 shows the fault acted"
	case signZombieWrites:
		text += "; zombie's post-fence writes never visible (it must try some)"
	case signConsumerCrash:
		text += "; a consume worker must be killed"
	case signProcessFault:
		text += "; a broker must be killed, paused, cut off or slowed"
	case signGroupChurn:
		text += "; a wave must join and a worker abort and leave"
	case signChurnDuplicates:
		text += "; a wave must join, a worker abort and leave, dup > 0 shows it acted"
	case signShareChurn:
		text += "; a consumer must leave and another join"
	}
	return text
}

// evidence is what a run showed besides the checker's counts.
type evidence struct {
	faultsFired  int64
	faultCounts  map[faults.Kind]int64
	zombieWrites int64 // records or commits the zombie tried after it was fenced
	churnAborts  int64 // transactions with records group-churn workers aborted to leave
	offenders    map[string][]string
	loadErr      error
	// hookErr is a --fault-exec hook that failed or a broker that did
	// not come back after its fault: the run stopped there.
	hookErr           error
	notApplicableNote string
}

// observedCounts are the worst counts over a run's checks.
type observedCounts struct {
	lost, duplicated, reordered, abortedVisible, phantom, ambiguousPresent uint64
	unprotected                                                            uint64
	incomplete                                                             []string
	// The checker's sharper classes (verify.Counts): lost split into lost
	// writes and unseen, inconsistent offsets, and the consumers' poll
	// skips and moves back; polled says consumers' polls were judged.
	lostWrites, unseen, inconsistent, pollSkips, nonMonotonic uint64
	polled                                                    bool
}

func observe(run *report.Run) observedCounts {
	var seen observedCounts
	for _, check := range run.Checks {
		counts := check.Counts
		seen.lost = max(seen.lost, counts.Lost)
		seen.duplicated = max(seen.duplicated, counts.Duplicated)
		seen.reordered = max(seen.reordered, counts.Reordered)
		seen.phantom = max(seen.phantom, counts.Phantom)
		seen.ambiguousPresent = max(seen.ambiguousPresent, counts.AmbiguousPresent)
		seen.unprotected = max(seen.unprotected, counts.Unprotected)
		seen.lostWrites = max(seen.lostWrites, counts.LostWrites)
		seen.unseen = max(seen.unseen, counts.Unseen)
		seen.inconsistent = max(seen.inconsistent, counts.InconsistentOffsets)
		seen.pollSkips = max(seen.pollSkips, counts.PollSkips)
		seen.nonMonotonic = max(seen.nonMonotonic, counts.NonMonotonicPolls)
		seen.polled = seen.polled || check.Reader == report.PollReader
		if check.Reader == "read_committed" || check.Reader == TableReader || check.Reader == report.PollReader {
			seen.abortedVisible = max(seen.abortedVisible, counts.AbortedVisible)
		}
		for _, violation := range check.Violations {
			if strings.HasPrefix(violation, "read back") {
				seen.incomplete = append(seen.incomplete, check.Reader+" "+check.Topic+": "+violation)
			}
		}
	}
	return seen
}

// judgeRun sets the run's status, reason and expectation from its checks,
// the plan's expectation and the evidence.
func judgeRun(run *report.Run, plan faults.Plan, proof evidence) {
	want := expectationFor(plan, run.Mode)
	seen := observe(run)
	expectation := &report.Expectation{Expected: want.describe(), Observed: describeObserved(seen, run, proof, plan)}
	run.Expectation = expectation
	defer func() { expectation.Verdict = run.Status }()
	if run.Status == report.StatusUnsupported || run.Status == report.StatusNotApplicable ||
		(run.Status == report.StatusError && run.Reason != "") {
		// Decided before any load (failRun: the fault setup or the
		// topics failed): that reason, not "nothing was acknowledged".
		expectation.Why = run.Reason
		return
	}
	if proof.hookErr != nil {
		run.Status, run.Reason = report.StatusError, "stopped, its records not checked: a --fault-exec command failed: "+proof.hookErr.Error()
		expectation.Why = run.Reason
		return
	}
	if len(seen.incomplete) > 0 {
		run.Status, run.Reason = report.StatusError, "could not read back everything it wrote, so its records were not all checked: "+strings.Join(seen.incomplete, "; ")
		expectation.Why = run.Reason
		return
	}
	var broken []string
	check := func(name string, count uint64, b bound, kind string) {
		if count > 0 && b == mustBeZero {
			broken = append(broken, fmt.Sprintf("%d %s", count, name))
			for _, example := range proof.offenders[kind] {
				expectation.Offenders = append(expectation.Offenders, kind+": "+example)
			}
		}
	}
	check("acknowledged-but-lost", seen.lost, want.lost, "lost")
	check("duplicated", seen.duplicated, want.duplicated, "duplicated")
	check("reordered", seen.reordered, want.reordered, "reordered")
	check("aborted-or-fenced-but-visible under read_committed", seen.abortedVisible, mustBeZero, "aborted-visible")
	check("never-sent (phantom)", seen.phantom, mustBeZero, "phantom")
	check(verify.ViolationInconsistentOffsets, seen.inconsistent, mustBeZero, verify.OffenderInconsistent)
	check(verify.ViolationPollSkips, seen.pollSkips, mustBeZero, verify.OffenderPollSkip)
	check(verify.ViolationNonMonotonicPolls, seen.nonMonotonic, mustBeZero, verify.OffenderNonMonotonic)
	if share := run.ShareGroup; share != nil {
		// Duplicate acceptances and lost records are the share check's
		// duplicated and lost above.
		check(verify.ViolationAfterAccept, share.AfterAccept, mustBeZero, verify.OffenderAfterAccept)
		check(verify.ViolationAboveLimit, share.AboveLimit, mustBeZero, verify.OffenderAboveLimit)
	}
	switch {
	case len(broken) > 0 && stalledPipeline(run, proof):
		// The output lacks records because the pipeline stopped making
		// progress, not because a transaction lost them: a liveness error.
		run.Status, run.Reason = report.StatusError, "the pipeline fell behind and did not finish within the drain time, so its output lacks records ("+
			strings.Join(broken, ", ")+"): a liveness problem, not a broken guarantee: "+proof.loadErr.Error()
	case len(broken) > 0:
		run.Status, run.Reason = report.StatusFail, "the mode broke its guarantee: "+strings.Join(broken, ", ")
		if proof.loadErr != nil {
			run.Reason += "; the producers also reported: " + proof.loadErr.Error()
		}
	case proof.loadErr != nil && !hasFaults(plan):
		run.Status, run.Reason = report.StatusError, "the load failed with no fault injected: "+proof.loadErr.Error()
	case run.Producers.Acknowledged == 0:
		run.Status, run.Reason = report.StatusError, "no record was acknowledged, so there was nothing to check"
	default:
		run.Status, run.Reason = report.StatusPass, ""
		if why := missingSign(want.sign, seen, proof); why != "" {
			run.Status, run.Reason = report.StatusUntestable, why
			if proof.loadErr != nil {
				// Often why the fault never acted (an action that could
				// not find its broker): say it.
				run.Reason += "; the run also reported: " + proof.loadErr.Error()
			}
		}
		if proof.loadErr != nil && run.Status == report.StatusPass {
			// Under faults a producer may give up (without retries);
			// the bounds held over everything it sent.
			run.Reason = "errors expected under this fault; lost, duplicated and reordered records within the mode's bounds (first error: " +
				proof.loadErr.Error() + ")"
		}
	}
	expectation.Why = run.Reason
}

// stalledPipeline reports whether a consume stage's (transact, database
// or relay) only broken bound is output records missing because its
// workers did not catch up (the drain's "pipeline committed" error says
// they did not).
func stalledPipeline(run *report.Run, proof evidence) bool {
	if proof.loadErr == nil || !strings.Contains(proof.loadErr.Error(), "pipeline committed") {
		return false
	}
	seen := observe(run)
	// A relay (under group-churn) may duplicate and reorder.
	relayed := specOf(run.Mode).RelaysUnderChurn
	return (seen.duplicated == 0 || relayed) && (seen.reordered == 0 || relayed) && seen.abortedVisible == 0 && seen.phantom == 0 &&
		seen.inconsistent == 0 && seen.pollSkips == 0 && seen.nonMonotonic == 0
}

// missingSign returns why the fault cannot be shown to have acted, or "".
func missingSign(want sign, seen observedCounts, proof evidence) string {
	switch want {
	case signNone:
		return ""
	case signFaultFired:
		if proof.faultsFired == 0 {
			return "no fault fired, so nothing tested the expectation"
		}
	case signDuplicates:
		if proof.faultsFired == 0 {
			return "no fault fired, so nothing tested the expectation"
		}
		if seen.duplicated == 0 {
			return fmt.Sprintf("%d faults fired but 0 duplicates: nothing shows the fault acted on this mode", proof.faultsFired)
		}
	case signZombieWrites:
		if proof.faultCounts[faults.KindZombieProducer] == 0 {
			return "no zombie producer was made, so nothing tested the fencing"
		}
		if proof.zombieWrites == 0 {
			return "the zombie producer never tried to write after it was fenced, so nothing tested the fencing"
		}
	case signConsumerCrash:
		if proof.faultCounts[faults.KindConsumerCrash] == 0 {
			return "no consume worker was killed, so nothing tested the recovery"
		}
	case signProcessFault:
		if proof.faultCounts[faults.KindKill] == 0 && proof.faultCounts[faults.KindPause] == 0 && proof.faultCounts[faults.KindCut] == 0 &&
			proof.faultCounts[faults.KindSlow] == 0 {
			return "no broker was killed, paused, cut off or slowed, so nothing tested the expectation"
		}
	case signShareChurn:
		if proof.faultCounts[faults.KindGroupLeave] == 0 || proof.faultCounts[faults.KindGroupJoin] == 0 {
			return "no share consumer left and was replaced, so nothing tested the expectation"
		}
	case signGroupChurn, signChurnDuplicates:
		switch {
		case proof.faultCounts[faults.KindGroupJoin] == 0:
			return "no wave of workers joined mid-run, so no rebalance tested the expectation"
		case proof.churnAborts == 0:
			return "no worker aborted a transaction with records to leave, so nothing tested the expectation"
		case want == signChurnDuplicates && seen.duplicated == 0:
			return fmt.Sprintf("%d transactions aborted to leave but 0 duplicates: nothing shows the fault acted on this mode", proof.churnAborts)
		}
	}
	return ""
}

// describeObserved states the counts a run showed.
func describeObserved(seen observedCounts, run *report.Run, proof evidence, plan faults.Plan) string {
	text := fmt.Sprintf("lost %d, dup %d, reord %d", seen.lost, seen.duplicated, seen.reordered)
	if seen.lost > 0 {
		text += fmt.Sprintf(" (lost writes %d, unseen %d)", seen.lostWrites, seen.unseen)
	}
	if seen.polled {
		text += fmt.Sprintf(", poll-skips %d, non-monotonic %d", seen.pollSkips, seen.nonMonotonic)
	}
	if seen.inconsistent > 0 {
		text += fmt.Sprintf(", inconsistent offsets %d", seen.inconsistent)
	}
	if seen.abortedVisible > 0 {
		text += fmt.Sprintf(", aborted-visible %d", seen.abortedVisible)
	}
	if seen.phantom > 0 {
		text += fmt.Sprintf(", phantom %d", seen.phantom)
	}
	if seen.ambiguousPresent > 0 || run.Producers.Errored > 0 {
		text += fmt.Sprintf(", errored %d (%d written)", run.Producers.Errored, seen.ambiguousPresent)
	}
	if hasFaults(plan) {
		text += fmt.Sprintf("; faults %d%s", proof.faultsFired, kindCounts(proof.faultCounts))
	}
	if hasClient(plan, faults.ClientZombieProducer) {
		text += fmt.Sprintf("; zombie post-fence writes %d", proof.zombieWrites)
	}
	if hasClient(plan, faults.ClientGroupChurn) && run.ShareGroup == nil {
		text += fmt.Sprintf("; aborted to leave %d", proof.churnAborts)
	}
	if share := run.ShareGroup; share != nil {
		text += fmt.Sprintf("; share: delivered %d, redelivered %d (released %d, crash %d, churn %d, lock timeout %d), accepted %d, "+
			"accepted twice %d, archived %d, max delivery count %d/%d", share.Delivered, share.Redelivered, share.ByRelease, share.ByCrash,
			share.ByChurn, share.ByLockTimeout, share.Accepted, share.DuplicateAccepted, share.Archived, share.MaxDeliveryCount,
			share.DeliveryLimit)
	}
	return text + describeApplication(run.Application, seen)
}

// describeApplication states what the application-level machinery did.
func describeApplication(application *report.ApplicationRun, seen observedCounts) string {
	switch {
	case application == nil:
		return ""
	case application.Recoveries > 0 || application.Resent > 0:
		return fmt.Sprintf("; writer recoveries %d (found written %d, resent %d)",
			application.Recoveries, application.FoundWritten, application.Resent)
	case application.DedupWindowOffsets > 0:
		return fmt.Sprintf("; input copies %d, dropped %d, unprotected %d (window %d offsets)",
			application.InputDuplicates, application.DroppedDuplicates, seen.unprotected, application.DedupWindowOffsets)
	case application.DatabaseCommits > 0:
		return fmt.Sprintf("; db commits %d, seeks %d, offset conflicts %d",
			application.DatabaseCommits, application.Seeks, application.OffsetConflicts)
	}
	return ""
}

// kindCounts renders " (drop-response 12, kill 1)".
func kindCounts(counts map[faults.Kind]int64) string {
	if len(counts) == 0 {
		return ""
	}
	var parts []string
	for kind, n := range counts {
		parts = append(parts, fmt.Sprintf("%s %d", kind, n))
	}
	sort.Strings(parts)
	return " (" + strings.Join(parts, ", ") + ")"
}
