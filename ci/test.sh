#!/usr/bin/env bash
# ci/test.sh: what CI runs on a clean clone. It installs what the tests need
# (kcat for the librdkafka end-to-end test, PostgreSQL for the --db
# postgres:// path of loadgen, Prometheus and promtool for the broker's
# metrics), then runs the README's test command, go vet
# and a gofmt check, the broker's tests once more with the invariants build
# tag, and last franz-go's own integration tests against one broker and
# against a 3-broker cluster (ci/kgo.sh, ci/kgo.sh --cluster).
set -euo pipefail
cd "$(dirname "$0")/.."

export PATH="$PATH:/usr/local/go/bin"

if ! command -v kcat >/dev/null 2>&1; then
  echo "== installing kcat (Debian package) for the librdkafka end-to-end test"
  if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq kcat >/dev/null
fi

echo "== [${SECONDS}s] gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change these files:"; echo "$unformatted"; exit 1
fi

echo "== [${SECONDS}s] go vet ./...  (with and without the invariants build tag)"
go vet ./...
go vet -tags invariants ./...

# The PostgreSQL path's tests read EXACTLY_TEST_POSTGRES_URL; EXACTLY_CI
# makes them fail rather than skip when it is missing.
export EXACTLY_CI=1
source ci/postgres.sh
trap exactly_postgres_stop EXIT
exactly_postgres_start

# The broker's metrics tests read EXACTLY_PROMETHEUS_URL and
# EXACTLY_PROMETHEUS_TARGETS (a real Prometheus scraping a broker the test
# starts) and run promtool; ci/prometheus.sh installs and starts them.
source ci/prometheus.sh
trap 'exactly_prometheus_stop; exactly_postgres_stop' EXIT
exactly_prometheus_start

echo "== [${SECONDS}s] go test ./...  (the README's test command)"
go test ./...

# The invariants build tag compiles in the run-time checks of the field
# invariants (internal/invariants); the broker's tests run once with it,
# but for the compaction soak (it checks sizes on disk, not fields) and the
# other clients' conformance tests (kcat, sarama, kafka-go, in
# broker/conformance: they drive the same broker paths as the franz-go
# tests, which do run), all of which ran
# above; that keeps CI under 15 minutes.
echo "== [${SECONDS}s] go test -tags invariants ./broker/..."
go test -tags invariants -skip '^(TestSoakInternalTopicsBounded|TestKcat.*|TestSarama.*|TestKafkaGo.*)$' ./broker/...

echo "== [${SECONDS}s] franz-go's kgo suite, one broker"
ci/kgo.sh

# The same suite against a 3-broker replicated cluster (replication
# factor 3): the same tests must pass as on one broker.
echo "== [${SECONDS}s] franz-go's kgo suite, a 3-broker cluster"
ci/kgo.sh --cluster
echo "== [${SECONDS}s] CI passed"
