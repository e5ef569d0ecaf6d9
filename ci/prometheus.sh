#!/usr/bin/env bash
# ci/prometheus.sh: sourced by ci/test.sh. Starts a private Prometheus
# server (Debian's prometheus package, which also brings promtool) for the
# broker's metrics test, and exports what `go test` needs:
#
#   EXACTLY_PROMETHEUS_URL      http://127.0.0.1:<port>, its HTTP API
#   EXACTLY_PROMETHEUS_TARGETS  a file_sd JSON file the Go test writes the
#                               address of the broker it starts into;
#                               Prometheus picks it up by inotify and
#                               scrapes it every second
#
#   source ci/prometheus.sh
#   exactly_prometheus_start    # installs Debian's prometheus if missing
#   ...                         # go test ./broker/ (TestPrometheusScrapesBroker,
#                               # TestPrometheusUnderReplicatedPartitions)
#   exactly_prometheus_stop     # stops only the server started above
#
# The server is not the system service: its own configuration, TSDB and
# log in a temporary directory, listening on 127.0.0.1 and a free port.

# The free-port helper is postgres.sh's (sourced from the same folder).
source "$(dirname "${BASH_SOURCE[0]}")/postgres.sh"

exactly_prometheus_start() {
  if ! command -v prometheus >/dev/null 2>&1 || ! command -v promtool >/dev/null 2>&1; then
    echo "== installing prometheus (Debian package) for the broker metrics tests"
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends prometheus >/dev/null
  fi
  # The free-port check connects, it does not bind: a port some
  # connection uses as its local port passes it and then fails the bind.
  # Three tries, each on a new port.
  local try
  for try in 1 2 3; do
    if exactly_prometheus_try_start; then return 0; fi
    echo "== prometheus start $try of 3 failed" >&2
  done
  return 1
}

# exactly_prometheus_try_start starts the server once on a free port.
exactly_prometheus_try_start() {
  EXACTLY_PROM_DIR=$(mktemp -d /tmp/exactly-prometheus-XXXXXX)
  local port
  port=$(exactly_postgres_free_port)
  echo '[]' >"$EXACTLY_PROM_DIR/targets.json"
  cat >"$EXACTLY_PROM_DIR/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  scrape_timeout: 900ms
  evaluation_interval: 1s
scrape_configs:
  - job_name: exactly-broker
    file_sd_configs:
      - files: ['$EXACTLY_PROM_DIR/targets.json']
        refresh_interval: 1s
YAML
  prometheus --config.file="$EXACTLY_PROM_DIR/prometheus.yml" \
    --storage.tsdb.path="$EXACTLY_PROM_DIR/data" \
    --web.listen-address="127.0.0.1:$port" \
    >"$EXACTLY_PROM_DIR/prometheus.log" 2>&1 &
  EXACTLY_PROM_PID=$!
  # Bounded wait for the HTTP API (60 × 0.5 s).
  local ready=""
  for _ in $(seq 1 60); do
    if curl -fsS "http://127.0.0.1:$port/-/ready" >/dev/null 2>&1; then ready=1; break; fi
    if ! kill -0 "$EXACTLY_PROM_PID" 2>/dev/null; then break; fi
    sleep 0.5
  done
  if [ -z "$ready" ]; then
    echo "prometheus did not become ready; its log:" >&2
    cat "$EXACTLY_PROM_DIR/prometheus.log" >&2
    exactly_prometheus_stop
    return 1
  fi
  export EXACTLY_PROMETHEUS_URL="http://127.0.0.1:$port"
  export EXACTLY_PROMETHEUS_TARGETS="$EXACTLY_PROM_DIR/targets.json"
  echo "== Prometheus $(prometheus --version 2>&1 | awk 'NR==1{print $3}') on 127.0.0.1:$port (files in $EXACTLY_PROM_DIR)"
}

exactly_prometheus_stop() {
  if [ -n "${EXACTLY_PROM_PID:-}" ]; then
    kill "$EXACTLY_PROM_PID" 2>/dev/null || true
    wait "$EXACTLY_PROM_PID" 2>/dev/null || true
  fi
  if [ -n "${EXACTLY_PROM_DIR:-}" ]; then
    rm -rf "$EXACTLY_PROM_DIR"
  fi
  EXACTLY_PROM_PID=""
  EXACTLY_PROM_DIR=""
}
