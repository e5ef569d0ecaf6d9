// Package faults injects the failures the seed's §2 names, so the load
// generator can show what each delivery guarantee does under them:
//
//  1. broker crash — Process: SIGKILL a broker the load generator launched
//     and restart it on the same data dir (plan action kill-restart), or
//     SIGSTOP/SIGCONT it (pause); on a cluster it did not launch the
//     operator's Hooks do the same (kill, start, pause, resume commands
//     with the target broker's id, host and port; RunHookActions);
//  2. producer→broker RPC lost — Proxy rules drop-request (the broker never
//     sees the request) and drop-response (the broker wrote it, the ack is
//     swallowed and the connection cut: "written but not acknowledged");
//  3. producer crash / zombie — a client fault the runner performs
//     (ClientAction zombie-producer);
//  4. broker→consumer RPC lost, consumer crash — drop-response on Fetch or
//     OffsetCommit, and ClientAction consumer-crash;
//  5. consumer-group churn — ClientAction group-churn (GroupChurn): consume
//     workers join in waves, abort their open transaction and leave, under
//     rotating balancers and static membership.
//
// # Proxy
//
// A Proxy listens on 127.0.0.1 once per upstream broker and forwards Kafka
// frames both ways. It parses every request header (API key, version,
// correlation id) and pairs responses with requests in order — Kafka
// answers in request order on a connection, and acks=0 Produce gets no
// answer. Metadata, FindCoordinator (v0–v3 single, v4+ batched) and
// DescribeCluster responses are decoded with kmsg, their broker addresses
// replaced by proxy listeners (created on demand for brokers seen for the
// first time) and re-encoded, so a client seeded with one proxy address
// reaches every broker through the proxy.
//
// Rules are data (Rule, usually from a Plan's YAML): match an API key and
// optionally a broker address or node id, inside a time window from the
// load's start (Proxy.StartClock; the proxy's own start until then); fire
// by probability, on every Nth or the first N matches, or on every match;
// then drop the request, drop the response, delay either, reset the
// connection, or blackhole the broker. A degrade rule slows every byte
// inside its window instead (package internal/netem).
//
// # Determinism
//
// Probability is a hash of (seed, rule index, listener ordinal, connection
// ordinal on the listener, request ordinal on the connection), not a shared
// random stream: the same seed fires on the same requests as long as each
// broker sees its connections opened in the same order and each connection
// carries the same requests, whatever the interleaving between connections.
// A single client connection per broker (or sequential reconnects, as in
// the tests) is the exact case; with many concurrent connections the fault
// rate is reproducible but which connection gets which ordinal is not.
// Every/first counters are shared by all connections and deterministic only
// when requests are consulted in a fixed order.
//
// # Events
//
// Every fired fault becomes an Event in an EventLog (concurrency-safe,
// counted by Kind, with an optional callback for the progress line).
// Response-phase faults are recorded when the response arrives, so a fault
// whose connection died first is not counted.
//
// # Slow follower
//
// The process action slow-follower degrades the network instead of
// breaking it: on a cluster the load generator launched behind partition
// proxies (package internal/partition), the broker that leads the fewest
// of the run's partitions gets its links to the other brokers impaired,
// both ways, with the action's Network (delay, jitter, bandwidth cap,
// loss; package internal/netem), so what acks=all waits for a slow
// replica can be measured. Clients reach every broker unimpaired. A zero
// Network runs through the same proxies unimpaired, for reference.
//
// # Plans
//
// A Plan (YAML, see LoadPlan) names a seed, proxy rules, process actions
// and client actions. The shipped plans are none, ack-loss, request-loss,
// conn-reset, broker-restart, leader-kill, coordinator-kill, leader-pause,
// broker-partition, slow-follower, zombie-producer, consumer-crash,
// group-churn, group-churn-steady and fetch-loss (PlanNames lists them).
package faults
