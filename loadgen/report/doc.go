// Package report defines the results file of `exactly loadgen`, renders its
// summary table, and writes it to disk.
//
// # Results file, schema_version 1
//
// One JSON object per `exactly loadgen` invocation, written to
// results/loadgen-<started_at>-<run_id>.json (or the --out directory).
// Readers must check schema_version; fields are only ever added within a
// version. Durations are in milliseconds unless the name says otherwise;
// times are RFC 3339 with nanoseconds.
//
//	{
//	  "schema_version": 1,
//	  "tool": "exactly loadgen",
//	  "run_id": "9f3c…",                      // 16 hex digits, also in every record header
//	  "started_at": "…", "finished_at": "…",
//	  "target":  {"kind": "embedded|kfake|bootstrap", "bootstrap": ["127.0.0.1:9092"], "description": "…",
//	              "shares_machine": true,               // broker on the load generator's machine; absent: not known
//	              "sharing": "…",                       // why, in words
//	              "broker_settings": {"log.fsync": "never (default)", "min.insync.replicas": "1 (default)",
//	                                  "log.flush.interval.ms": "unknown", …}},   // DescribeConfigs of the first broker
//	  "machine": {"goos", "goarch", "num_cpu", "go_version", "hostname",
//	              "cpu_model", "gomaxprocs", "kernel"},  // the last three, and target's last three, added in v1
//	  "workload": {…},                        // the workload as run, field names as in the YAML file
//	  "passed": true,                         // every run met its expectation (unsupported runs do not fail)
//	  "runs": [ Run, … ],
//	  "find_max": FindMax                     // --find-max only; added in v1, omitted when absent
//	  "overhead": Overhead                    // added in v1; only for interleaved rounds (the overhead workload, the cost rounds of the standard suite); loads[].faults names the fault plan of a cost table
//	  "group_protocols": GroupProtocolComparison  // added in v1; only for a comparison of group protocols (fields as in the GroupProtocolComparison type)
//	}
//
// Run, one per delivery mode (and per commit interval of a transactional
// sweep):
//
//	{
//	  "name": "transactional@100ms", "mode": "transactional",
//	  "status": "pass|fail|unsupported|error|untestable|not-applicable", "reason": "…",
//	  "client_settings": {"acks": "all", "enable.idempotence": "true", "retries": "…",
//	                      "max.in.flight.requests.per.connection": "5",
//	                      "transactional.id": "…", "isolation.level": "read_committed", …},
//	  "started_at", "finished_at", "measured_seconds",
//	  "producers": {"sent", "acknowledged", "errored", "aborted", "uncertain"},
//	  "transactions": {"committed", "aborted", "failed"},
//	  "throughput": {"records_per_second", "megabytes_per_second", "ratio_to_baseline"},
//	  "latency": {"produce_ack": Histogram, "end_to_end": Histogram, "transaction_commit": Histogram,
//	              "produce_ack_uncorrected": Histogram},   // fixed-rate runs only; added in v1
//	  "latency_origin": "scheduled|created",   // what produce_ack and end_to_end count from; added in v1
//	  "time_series": [{"elapsed_seconds", "records_per_second", "megabytes_per_second", "p99_ms"}, …],
//	  "errors_by_code": {"NOT_LEADER_FOR_PARTITION": 3, "client: context deadline exceeded": 1},
//	  "retries": 0,                            // produce retries the client reported (from its log)
//	  "faults_fired": 0,
//	  "fault_plan": "ack-loss",                // added in v1, omitted when absent
//	  "load_started_at": "…",                  // origin of every elapsed_seconds
//	  "fault_events": [{"elapsed_seconds", "kind", "broker", "detail"}, …],
//	  "expectation": {"expected", "observed", "verdict", "why", "offenders": ["…"]},
//	  "checks": [{"reader": "read_committed|read_uncommitted|table|polls", "topic",
//	              "consumers": "pipeline workers",   // polls checks only; added in v1
//	              "complete", "counts": Counts, "violations": ["…"]}, …],
//	  "application": {"database", "table", "dedup_window_offsets", "input_duplicates", "dropped_duplicates",
//	                  "unprotected", "database_commits", "seeks", "offset_conflicts",
//	                  "recoveries", "found_written", "resent", "writer_copies"},  // added in v1; application-level modes only
//	  "round": 3, "slot": "transactional@100ms",  // added in v1; runs of interleaved rounds only
//	  "broker_metrics": BrokerMetrics          // added in v1; only when the broker's /metrics address is known
//	  "group_protocol": "classic|consumer",    // added in v1; runs with group consumers only
//	  "rebalance_pauses": {"events", "pauses", "median_ms", "p99_ms", "max_ms", "total_ms",
//	                       "normal_gap_ms", "window_ms", "pauses_ms": […]}  // added in v1; group-churn runs only
//	}
//
// BrokerMetrics, the broker's /metrics scraped before the load and after
// it drained ([BrokerMetrics]): "url", "flavour" (whose names: "exactly",
// "kafka-jmx", "redpanda"; absent in results written before), "notes"
// (what the flavour does not publish), "seconds" between the scrapes,
// "warnings" (a failed scrape: no figures, the run is judged as usual),
// "counters" (deltas by series, e.g. "exactly_requests_total{api=\"Produce\"}"),
// "histograms" (by series: "count", "sum", "p50", "p99" in seconds, from
// the bucket deltas), "apis" (per API: "requests", mean "queue_ms",
// "local_ms", "durability_ms", "send_ms", "total_ms" per request,
// "total_p99_ms"), "fsyncs_per_second", "markers_per_commit" (markers
// written per committed or aborted transaction), "markers_written",
// "duplicates_dropped", "transactions_committed", "transactions_aborted",
// "end_txn_mean_ms" (these absent when the flavour does not publish them);
// other brokers only: "bytes_in", "bytes_out", "records_in",
// "under_replicated_partitions" (Kafka), "under_replicated_replicas"
// (Redpanda), "gauges" (coordinator gauges after the load), and per API
// "statistic" ("median": Kafka's medians, not means) and "total_only"
// (Redpanda: no split).
//
// Overhead, the ratios of a run of interleaved rounds: in each round
// every slot ran once, on a fresh topic, in an order rotated by one per
// round; each ratio is a slot's value over the baseline slot's in the
// same round:
//
//	{
//	  "baseline": "at-least-once", "rounds": 5,
//	  "producers": 2,                          // producer clients sharing each slot's load
//	  "resamples": 2000, "confidence": 0.95, "random_stream": 17,   // the bootstrap: fixed, so reproducible
//	  "loads": [{
//	    "rate": 0,                             // offered records/s; 0: saturation
//	    "network": {                           // added in v1; only on a step of a network sweep
//	      "path": "clients|follower",          // clients: between the clients and every broker; follower: a follower's links to the other brokers
//	      "rtt_ms": 5,                         // round-trip time added, each direction delayed by half; 0: the same proxies without delay (the reference)
//	      "link": "delay 2.5ms",               // each direction's whole impairment, in words ("no impairment" at 0)
//	      "plan": "ack-loss",                  // the fault plan under the network; omitted for none
//	      "measured_rtt_ms": 5.3               // median round trip measured on the path before the rounds; omitted when not measured
//	    },
//	    "rows": [{                             // the A/A row ("noise_floor": true) first
//	      "slot": "transactional@100ms", "mode": "transactional", "commit_interval_ms": 100,
//	      "noise_floor": false, "runs": ["transactional@100ms #1", …],
//	      "throughput": RatioStat,             // records/s, higher is better
//	      "ack_p99": RatioStat                 // produce-ack p99 ms, lower is better
//	    }, …]
//	  }, …]
//	}
//
// A network sweep repeats the rounds with a round-trip time added on one
// path, one load per step: the steps of a sweep share rate, network.path
// and network.plan, and differ in network.rtt_ms; loads[].faults then
// names the plan with the network layered on ("rtt-5ms",
// "ack-loss-rtt-5ms"). Each step's ratios are against the baseline at
// the same round-trip time.
//
// RatioStat: "values" (the slot's, one per round; 0 for a round that did
// not pass), "baseline" (the baseline's in the same rounds), "ratios"
// (values/baseline for the rounds where both are positive),
// "median_ratio", "ci_low", "ci_high" (the percentile interval of the
// medians of the rounds resampled with replacement), and "verdict":
// "faster" or "slower" when the interval excludes 1, "within noise"
// when it contains 1.
//
// A "table" check reads the output table of consumer-dedup or
// external-offsets from the application database (its topic field names
// the table and the run's rows); its counts are those of the rows, keyed
// by the input record each row came from.
//
// A "polls" check judges the polls of the run's consumers of one kind
// ("consumers": pipeline workers, database workers, relay workers, live
// consumers) of one topic, against the read-back of that topic: read is
// the records they polled, unique the distinct offsets, and the counts
// that can be non-zero are inconsistent_offsets, poll_skips,
// non_monotonic_polls and, for read_committed consumers, aborted_visible
// (records polled at offsets the read_committed read-back did not
// return: aborted or never committed); complete says the read-back the skips were judged
// against was complete (without one, skips are not judged).
//
// throughput counts acknowledged records sent after the warm-up, over the
// measured seconds (MB = 10^6 bytes of record value). ratio_to_baseline is
// this run's records per second divided by that of the at-least-once run of
// the same invocation (0 when there is none). Counts are those of
// verify.Counts, whose package doc defines each: read, foreign, unique,
// lost, duplicated, reordered, aborted_visible, phantom, ambiguous_present,
// ambiguous_absent; added within version 1 and omitted when zero:
// unprotected (a consumer-dedup table's copies beyond the dedup window,
// counted there instead of in duplicated), lost_writes and unseen (lost =
// lost_writes + unseen: lost records acknowledged below / not below a
// position the read reached), inconsistent_offsets (offsets at which two
// reads of the run found different records), poll_skips (records a
// consumer jumped over between two polls without a reassignment or seek)
// and non_monotonic_polls (polls that went back without one).
//
// Latency origin: in a run at a fixed rate (workload rate > 0),
// latency_origin is "scheduled": produce_ack and end_to_end count from each
// record's scheduled send time (the pacer's schedule, which does not move
// when a producer falls behind, so a stalled broker's wait is counted for
// every record that should have been sent during it), and
// produce_ack_uncorrected counts from when the producer handed the record
// to the client. Unpaced (maximum-rate) runs have no schedule:
// latency_origin is "created", the latencies count from when the record
// was created, and there is no produce_ack_uncorrected. Files without
// latency_origin (written before it was added) count from the creation.
//
// Histogram, values in milliseconds:
//
//	{"count", "min_ms", "max_ms", "mean_ms",
//	 "percentiles_ms": {"50": …, "90": …, "99": …, "99.9": …, "99.99": …, "100": …},
//	 "hdr": "HISTFAAA…"}                       // HdrHistogram V2 compressed, base64, microsecond units
//
// The "hdr" field decodes with hdrhistogram.Decode (Go) or
// HistogramLogReader (Java) to the full recorded distribution.
//
// FindMax, the sustainable-rate search of `exactly loadgen --find-max`
// (its runs list is empty: the steps are summarized here instead):
//
//	{"criteria": {"tolerance": 0.01, "max_p99_ms": 50, "precision": 0.05, "start_records_per_second": 1000,
//	              "retries": 1, "max_steps": 16, "budget_seconds": 180, "step_warmup_seconds": 1, "step_seconds": 3},
//	 "targets": [{"target": {"kind", "bootstrap", "description"},
//	              "modes": [{"name": "transactional@100ms", "mode": "transactional",
//	                         "sustainable_records_per_second": 12000,  // highest target of a held step; 0: none held
//	                         "failed_records_per_second": 12500,       // lowest failed target above it; 0: none
//	                         "ratio_to_baseline": 0.8,                 // over at-least-once's on the same target
//	                         "stopped": "precision|max-rate|max-steps|budget|none-held|error", "error": "…",
//	                         "steps": [{"target_records_per_second", "attempt", "achieved_records_per_second", "p99_ms",
//	                                    "held", "why", "status", "seconds"}, …]}, …]}, …]}
//
// A step held when its run passed its checks, achieved at least (1 -
// tolerance) × its target (records sent after the warm-up and acknowledged,
// over step_seconds), and its p99 acknowledgement latency was at most
// max_p99_ms; a failed step is run again up to retries times (attempt 2,
// …) and its rate holds if any attempt held. The sustainable rate is always
// the target of a held step, never a rate between steps. With
// --rate-fraction, "equal_load" says at which rates the runs list ran:
//
//	"equal_load": {"baseline_records_per_second": 12000, "source": "find-max on embedded|--sustainable-rate",
//	               "cells": [{"fraction": 0.5, "records_per_second": 6000, "runs": ["at-least-once at 50%", …]}, …]}
package report
