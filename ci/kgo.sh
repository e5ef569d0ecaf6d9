#!/usr/bin/env bash
# ci/kgo.sh: franz-go's own integration tests (package pkg/kgo of the
# franz-go version in go.mod) against one `exactly broker`.
#
#   ci/kgo.sh                      # the whole suite
#   ci/kgo.sh -run 'TestTxnEtl'    # extra `go test` flags are passed on
#   ci/kgo.sh --cluster            # against `exactly cluster --brokers 3`,
#                                  # replication factor 3 (KGO_TEST_RF=3)
#
# It builds the binary, starts a broker on a free loopback port with a
# temporary data directory, and runs `go test github.com/twmb/franz-go/pkg/kgo`
# from this module, so the tests compile against the dependency versions
# in go.mod. The tests find the broker through KGO_SEEDS; KGO_TEST_RF=1
# because there is one broker (their default, 3, makes topic creation fail
# with INVALID_REPLICATION_FACTOR); KGO_TEST_RECORDS=25000 keeps the
# produce-and-consume tests short. KGO_TIMEOUT (default 5m) bounds the run.
# KGO_LOG=<file> keeps a copy of the tests' verbose log there.
#
# The tests' own logs go to a file; the script prints which tests failed
# and which skipped themselves, and on failure the end of the test log and
# of the broker's log (the temporary directory is then kept). The broker
# is stopped by its pid on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

export PATH="$PATH:/usr/local/go/bin"

# Tests to skip because they need a protocol the broker does not
# implement, as `go test -skip` patterns. None is needed with franz-go
# v1.22.3: the broker serves KIP-848 and share groups (KIP-932), whose
# tests franz-go runs when ApiVersions lists them, and the one test of
# what it lacks looks for a variable we do not set
# (KGO_TEST_OAUTH_SEEDS; the SCRAM
# tests' KGO_TEST_SCRAM_SEEDS is set, below, for the single broker and the cluster) and
# skips itself; the summary lists them, and
# README.md ("franz-go's test suite") explains them. A test that fails for
# want of a protocol in a later franz-go goes here, with its reason, and
# into the README.
skips=()

cluster=""
if [ "${1:-}" = "--cluster" ]; then
  cluster=1
  shift
fi

franz_version=$(go list -m -f '{{.Version}}' github.com/twmb/franz-go)
work=$(mktemp -d /tmp/exactly-kgo-XXXXXX)
broker_pid=""

finish() {
  local status=$?
  if [ -n "$broker_pid" ] && kill -0 "$broker_pid" 2>/dev/null; then
    kill -TERM "$broker_pid" 2>/dev/null || true
    wait "$broker_pid" 2>/dev/null || true
  fi
  if [ "$status" -ne 0 ]; then
    if [ -s "$work/kgo-test.log" ]; then
      echo "== end of the test log ($work/kgo-test.log)"
      tail -n 80 "$work/kgo-test.log"
    fi
    if [ -s "$work/broker.log" ]; then
      echo "== end of the broker's log ($work/broker.log)"
      tail -n 60 "$work/broker.log"
    fi
    for member_log in "$work"/cluster/broker-*.log; do
      if [ -s "$member_log" ]; then
        echo "== end of a cluster member's log ($member_log)"
        tail -n 40 "$member_log"
      fi
    done
    echo "== logs and the broker's data directory are kept in $work"
  else
    rm -rf "$work"
  fi
  exit "$status"
}
trap finish EXIT

echo "== building exactly"
go build -o "$work/exactly" ./cmd/exactly

# port_free P: nothing accepts connections on 127.0.0.1:P now.
port_free() {
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# pick_cluster_port: a PORT whose twelve ports (PORT..PORT+2 for Kafka,
# +100 for Raft, +200 for the quorum's RPC, +300 for the SASL listeners)
# nothing listens on, below the
# kernel's ephemeral range (32768 up), where outgoing connections take
# their local ports and a port free a moment ago can be taken by one.
pick_cluster_port() {
  local candidate offset ok
  for _ in $(seq 50); do
    candidate=$((20000 + RANDOM % 12300))
    ok=1
    for offset in 0 1 2 100 101 102 200 201 202 300 301 302; do
      port_free $((candidate + offset)) || ok=""
    done
    if [ -n "$ok" ]; then echo "$candidate"; return 0; fi
  done
  echo "no free ports for a 3-broker cluster" >&2
  return 1
}

# wait_for_address: sets address once the broker (or cluster) prints it;
# returns 1 if it exits first, 2 if it does not within 60s.
wait_for_address() {
  address=""
  local deadline=$((SECONDS + 60))
  while [ -z "$address" ]; do
    if [ -n "$cluster" ]; then
      address=$(sed -n 's/^exactly cluster .* bootstrap: \([^ ]*\)$/\1/p' "$work/broker.out")
    else
      address=$(sed -n 's/^exactly broker .* listening on \([^ ]*\) .*/\1/p' "$work/broker.out")
    fi
    if [ -n "$address" ]; then return 0; fi
    if ! kill -0 "$broker_pid" 2>/dev/null; then return 1; fi
    if [ "$SECONDS" -ge "$deadline" ]; then return 2; fi
    sleep 0.1
  done
}

rf=1
started=""
printf 'users:\n  - name: kgo\n    password: kgo-secret\n' >"$work/users.yaml"
if [ -n "$cluster" ]; then
  rf=3
  # Another process can still bind one of the ports between the check
  # and the brokers' own bind; then a broker exits with "address already
  # in use" and the cluster is started again on other ports (three tries).
  for try in 1 2 3; do
    port=$(pick_cluster_port)
    rm -rf "$work/cluster"
    # Every member also has a SASL_PLAINTEXT listener (PORT+300+i-1) with
    # the SCRAM user, for the SCRAM tests, as the single broker below.
    "$work/exactly" cluster --brokers 3 --data-dir "$work/cluster" --listen "127.0.0.1:$port" \
      --sasl-listen "127.0.0.1:$((port + 300))" --users-file "$work/users.yaml" \
      >"$work/broker.out" 2>"$work/broker.log" &
    export KGO_TEST_SCRAM_SEEDS="127.0.0.1:$((port + 300)),127.0.0.1:$((port + 301)),127.0.0.1:$((port + 302))" KGO_TEST_SCRAM="kgo:kgo-secret:512"
    broker_pid=$!
    waited=0
    wait_for_address || waited=$?
    if [ "$waited" -eq 0 ]; then started=1; break; fi
    if [ "$waited" -eq 1 ] && grep -qs 'address already in use' "$work"/cluster/broker-*.log; then
      wait "$broker_pid" 2>/dev/null || true
      broker_pid=""
      echo "   try $try: a port of 127.0.0.1:$port was taken before the brokers bound it; trying other ports"
      continue
    fi
    break
  done
else
  # Port 0: the kernel picks a free port; the broker prints the address it
  # listens on (and advertises) on stdout once it accepts connections.
  # A second listener, SASL_PLAINTEXT on a free port of our choosing, with
  # one SCRAM user from a users file, serves the SCRAM tests
  # (KGO_TEST_SCRAM_SEEDS, KGO_TEST_SCRAM).
  for _ in $(seq 50); do
    candidate=$((20000 + RANDOM % 12700))
    if port_free "$candidate"; then scram_port=$candidate; break; fi
  done
  if [ -z "${scram_port:-}" ]; then echo "no free port for the SASL listener" >&2; exit 1; fi
  "$work/exactly" broker --listen 127.0.0.1:0 --data-dir "$work/data" --users-file "$work/users.yaml" \
    --config "listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:$scram_port" \
    >"$work/broker.out" 2>"$work/broker.log" &
  export KGO_TEST_SCRAM_SEEDS="127.0.0.1:$scram_port" KGO_TEST_SCRAM="kgo:kgo-secret:512"
  broker_pid=$!
  waited=0
  wait_for_address || waited=$?
  if [ "$waited" -eq 0 ]; then started=1; fi
fi
if [ -z "$started" ]; then
  if [ "${waited:-1}" -eq 2 ]; then
    echo "the broker did not report its address within 60s" >&2
  else
    echo "the broker exited before listening" >&2
  fi
  exit 1
fi

skip_flag=()
if [ "${#skips[@]}" -gt 0 ]; then
  skip_flag=(-skip "^($(IFS='|'; echo "${skips[*]}"))\$")
fi
what="exactly broker"
if [ -n "$cluster" ]; then what="exactly cluster (3 brokers, replication factor 3)"; fi
echo "== franz-go $franz_version pkg/kgo tests against $what on $address (pid $broker_pid)"
start=$SECONDS
status=0
KGO_SEEDS="$address" KGO_TEST_RF="$rf" KGO_TEST_RECORDS=25000 \
  go test github.com/twmb/franz-go/pkg/kgo -count=1 -v -timeout "${KGO_TIMEOUT:-5m}" \
  "${skip_flag[@]}" "$@" >"$work/kgo-test.log" 2>&1 || status=$?

log="$work/kgo-test.log"
if [ -n "${KGO_LOG:-}" ]; then cp "$log" "$KGO_LOG"; fi
echo "   $(grep -c -- '--- PASS' "$log" || true) passed (tests and subtests), in $((SECONDS - start))s"
if grep -q -- '--- SKIP' "$log"; then
  echo "   skipped by the tests themselves:"
  # A skipped test's reason is the first line it logged ("    x_test.go:N:
  # reason"), under the "=== RUN/CONT/NAME <test>" header that names it.
  awk '
    /^=== (RUN|CONT|NAME|PAUSE) / { current = $3; next }
    /^ +[A-Za-z0-9_]+_test\.go:[0-9]+: / {
      if (!(current in said)) { sub(/^ +[A-Za-z0-9_]+_test\.go:[0-9]+: /, ""); said[current] = $0 }
      next
    }
    /^ *--- SKIP: / { if (!($3 in shown)) { shown[$3] = 1; printf "     %s: %s\n", $3, said[$3] } }
  ' "$log" | sort
fi
if [ "$status" -ne 0 ]; then
  echo "== franz-go pkg/kgo tests FAILED (go test exit $status):"
  grep -E -- '--- FAIL|^panic:|^FAIL' "$log" | sed 's/^/   /' || true
  exit "$status"
fi
echo "== franz-go pkg/kgo tests passed"
