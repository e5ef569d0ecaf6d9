// Package loadgen is the load generator of `exactly loadgen`: it runs
// workloads in each delivery mode against a Kafka-compatible cluster through
// franz-go, under a matrix of fault plans, measures throughput and latency
// with HdrHistogram, and checks every record it wrote with package verify.
//
// This package is the runner: a [Workload] expands into cells, one per
// mode and fault plan (its [MatrixEntry] rows, expanded by planRuns;
// cellNotApplicable says which cells are not applicable); each cell
// starts its faults (faultEnv; process faults on a cluster it did not
// launch run the operator's --fault-exec hooks on the broker pickBroker
// picks from Metadata), its consume stage (loadRun's startStage, with
// startPipeline, startDBStage) and its producers (producer, or
// singleWriter's single writers), drains, reads back and checks what it wrote
// (verifyRun, readBack, runObservations) and is judged against its
// expectation (expectationFor, judgeRun). At a fixed rate latencies count
// from each record's scheduled send time, with the uncorrected figure
// beside them (sendTimeOf); every result records where it was measured:
// machine, whether client and broker share it, the broker's settings
// (describeTarget). [FindMax] searches each mode's sustainable rate, one
// fixed-rate Run per step, with the search of package findmax. A workload
// with an overhead section ([OverheadSpec]) expands instead into
// interleaved rounds of slots, whose per-round ratios to at-least-once
// become the results' overhead section (with package stats). The group
// consumers' protocol (classic or KIP-848's consumer protocol) is the
// [Workload]'s GroupProtocol, which groupProtocolOptions sets on every
// group consumer; a group-churn run measures its rebalance pauses
// (rebalancePauses), and a workload with a group_protocols section
// ([GroupProtocolsSpec]) runs every run under both protocols in
// interleaved rounds and compares them. What differs between modes, and
// the machinery a mode uses, live in the packages below:
//
//   - a delivery mode lives in package modes, one file per mode, as a
//     modes.Spec the runner reads (specOf is its side of them);
//   - a consume stage (transact pipeline, database stages, relay) lives in
//     package stages; runPlan's sessionSpec, dbStageSpec and relaySpec
//     build each worker's settings from the run;
//   - a worker subprocess (the processes client faults freeze or kill)
//     speaks the protocol of package worker; workerRoles (served by
//     [RunWorker]) are the roles it runs, startWorkerPipeline
//     (consumer-crash, with [LaunchedBrokerProperties] and fitCrashDrains:
//     the killed workers' session on each protocol and target) and
//     runZombieChain (zombie-producer) the runner's use of them,
//     startChurnStage the group-churn waves;
//   - the application database is package appdb, the poll hook package
//     pollwatch, the checker and the offending records package verify, the
//     fault proxy and plans package faults, the results and dashboard
//     package report.
//
// While it runs, the loadgen's own counts can be served to Prometheus
// (package livemetrics, fed by runMetrics, which the producers record
// to, and by the checker through noteChecked); the target broker's
// /metrics, when known, is scraped before and after each cell into the
// cell's broker_metrics (cellScrape, with package brokerscrape).
//
// The cluster is a [Target] ([StartTarget]): kfake or an existing cluster
// here, or the embedded broker, which the exactly command (cmd/exactly)
// provides, so that this package does not link the broker.
//
// What one `exactly loadgen` invocation runs with these pieces — a
// workload in one [Run], a [FindMax] search and the runs at fractions of
// the rate it finds, the security workload over each protocol — and the
// one writer of its tables, results file, dashboard and CSV file are
// package [github.com/exactly-eos/exactly/loadgen/suite]'s.
package loadgen
