#!/bin/bash
# Scale-out under load (issue: a cluster people can operate). Starts
# `exactly cluster --brokers 3`, runs three load generators against it
# (idempotent, transactional at 100 ms commits, eos-pipeline; 1,000
# records/s each for 150 s, RF 3, 6 partitions, no injected faults), and
# meanwhile: 45 s in, `exactly cluster add-broker` starts broker 4 and
# spreads replicas and preferred leaders over four brokers; 10 s after
# that, `exactly cluster drain --broker 1` moves every replica off broker
# 1, which is then stopped (SIGTERM). Each load generator's results JSON
# (its per-second throughput and p99 series, its checker's verdict) is in
# DIR/res-MODE; the times of the steps are in DIR/events (Unix seconds).
#
# Usage: ci/scale-out.sh [EXACTLY_BINARY] [DIR]   (about 4 minutes)
# Loopback only: ports 19092-19095, 19192-19195, 19292-19295.
set -u
X=${1:-exactly}
D=${2:-/tmp/exactly-scale-out}
rm -rf "$D"; mkdir -p "$D"
"$X" cluster --brokers 3 --data-dir "$D/c" --listen 127.0.0.1:19092 > "$D/cluster.out" 2>&1 &
CPID=$!
trap 'kill -TERM $CPID 2>/dev/null' EXIT
for _ in $(seq 1 60); do grep -q ready "$D/cluster.out" && break; sleep 1; done
grep -q ready "$D/cluster.out" || { echo "cluster not ready; see $D/cluster.out"; exit 1; }
B=127.0.0.1:19092,127.0.0.1:19093,127.0.0.1:19094
LOADGENS=()
for m in idempotent transactional eos-pipeline; do
  "$X" loadgen --bootstrap $B --mode $m --records 150000 --duration 150s --drain 60s --rate 1000 \
    --replication-factor 3 --partitions 6 --faults none --json-progress --out "$D/res-$m" \
    > "$D/lg-$m.out" 2> "$D/lg-$m.err" &
  LOADGENS+=($!)
done
sleep 45
echo "add $(date +%s)" >> "$D/events"
"$X" cluster add-broker --data-dir "$D/c" > "$D/add.out" 2>&1 &
APID=$!
trap 'kill -TERM $APID $CPID 2>/dev/null' EXIT
for _ in $(seq 1 120); do grep -q "preferred leaders elected\|rebalance:" "$D/add.out" && break; sleep 1; done
echo "added $(date +%s)" >> "$D/events"
sleep 10
echo "drain $(date +%s)" >> "$D/events"
"$X" cluster drain --bootstrap 127.0.0.1:19093 --broker 1 > "$D/drain.out" 2>&1
echo "drained $(date +%s)" >> "$D/events"
B1=$(pgrep -P $CPID -f -- "--node-id 1 ")
[ -n "$B1" ] && kill -TERM "$B1"
echo "stopped1 $(date +%s)" >> "$D/events"
status=0
for p in "${LOADGENS[@]}"; do wait "$p" || status=1; done
echo "loadgens done $(date +%s)" >> "$D/events"
cat "$D/add.out" "$D/drain.out"
for m in idempotent transactional eos-pipeline; do grep -h cell_finished "$D/lg-$m.out"; done
exit $status
