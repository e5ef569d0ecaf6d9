package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/exactly-eos/exactly/loadgen"
	"github.com/exactly-eos/exactly/loadgen/clientsec"
	"github.com/exactly-eos/exactly/loadgen/report"
)

// securityTestWorkload is a short security workload: two modes, few
// records, 4 MiB read twice per protocol.
const securityTestWorkload = `name: security-test
description: a short security workload
modes: [at-least-once, transactional]
partitions: 2
replication_factor: 1
record_size: 256
keys: {distribution: none, space: 1}
producers: 1
rate: 400
consumers: 1
records: 400
duration: 1s
warmup: 0s
drain: 15s
transaction: {commit_intervals: [100ms], timeout: 30s}
pipeline: {workers: 1}
security:
  protocols: [PLAINTEXT, SSL, SASL_SSL]
  mechanism: SCRAM-SHA-512
  consume_bytes: 4194304
  consume_passes: 2
`

// kfakeSecurityListeners stands in for the embedded broker's three
// listeners with three kfake clusters: one PLAINTEXT, one TLS, one SASL
// (SCRAM-SHA-512) over TLS.
func kfakeSecurityListeners(t *testing.T) func(context.Context, string, loadgen.SecuritySpec) ([]securityListener, loadgen.Target, func() error, error) {
	return func(ctx context.Context, _ string, spec loadgen.SecuritySpec) ([]securityListener, loadgen.Target, func() error, error) {
		plain, err := kfake.NewCluster(kfake.NumBrokers(1))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(plain.Close)
		sslAddress, caFile := tlsKfake(t, false)
		saslAddress, saslCA := secureKfake(t, true)
		configs := map[string]clientsec.Config{
			clientsec.Plaintext: {},
			clientsec.SSL:       {Protocol: clientsec.SSL, CAFile: caFile},
			clientsec.SASLSSL: {Protocol: clientsec.SASLSSL, Mechanism: spec.Mechanism, Username: "alice", Password: "alice-secret",
				CAFile: saslCA},
		}
		addresses := map[string]string{clientsec.Plaintext: plain.ListenAddrs()[0], clientsec.SSL: sslAddress, clientsec.SASLSSL: saslAddress}
		parent, err := loadgen.StartTarget(ctx, loadgen.TargetConfig{Kind: loadgen.TargetBootstrap, Bootstrap: []string{addresses[clientsec.Plaintext]}})
		if err != nil {
			t.Fatal(err)
		}
		var listeners []securityListener
		for _, protocol := range spec.Protocols {
			security, err := configs[protocol].Resolve()
			if err != nil {
				t.Fatal(err)
			}
			listeners = append(listeners, securityListener{protocol: protocol,
				target: loadgen.ListenerTarget(parent, protocol, addresses[protocol], security)})
		}
		return listeners, parent, func() error { return nil }, nil
	}
}

// tlsKfake is a kfake cluster that listens with TLS only (no SASL).
func tlsKfake(t *testing.T, _ bool) (address, caFile string) {
	t.Helper()
	caFile, pair := testCertificate(t)
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.TLS(&tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	return cluster.ListenAddrs()[0], caFile
}

// The security workload runs every mode over every protocol and fills
// every cell of its table: each run passes its checks, each cell has a
// throughput and a p99 with ratios to PLAINTEXT (1 for PLAINTEXT
// itself), each protocol a consume cost; the text table and the results
// file say the same, and the dashboard shows the section.
func TestSecurityWorkloadFillsEveryCell(t *testing.T) {
	dir, stdout := runKfakeSecurityWorkload(t, securityTestWorkload)
	t.Log(stdout.String())
	results := readOnlyResults(t, dir)
	section := results.Security
	if section == nil {
		t.Fatal("no security section")
	}
	if len(results.Runs) != 6 || len(section.Cells) != 6 {
		t.Fatalf("%d runs, %d cells; want 6 (2 modes x 3 protocols)", len(results.Runs), len(section.Cells))
	}
	for _, mode := range []string{"at-least-once", "transactional@100ms"} {
		for _, protocol := range []string{"PLAINTEXT", "SSL", "SASL_SSL"} {
			cell := section.Cell(mode, protocol)
			if cell == nil {
				t.Errorf("no cell for %s over %s", mode, protocol)
				continue
			}
			if cell.Status != report.StatusPass || cell.RecordsPerSecond <= 0 || cell.AckP99Millis <= 0 || cell.EndToEndP99Millis <= 0 ||
				cell.ThroughputRatio <= 0 || cell.AckP99Ratio <= 0 || cell.Run != mode+" over "+protocol {
				t.Errorf("cell %+v is not filled", *cell)
			}
			if protocol == "PLAINTEXT" && (cell.ThroughputRatio != 1 || cell.AckP99Ratio != 1) {
				t.Errorf("PLAINTEXT's ratios to itself are %v, %v", cell.ThroughputRatio, cell.AckP99Ratio)
			}
		}
	}
	if len(section.Consume) != 3 {
		t.Fatalf("consume costs %+v, want 3", section.Consume)
	}
	for _, cost := range section.Consume {
		if cost.Error != "" || cost.CPUSecondsPerGB <= 0 || len(cost.PassCPUSecondsPerGB) != 2 || cost.Ratio <= 0 || cost.Bytes != 4<<20 {
			t.Errorf("consume cost %+v is not measured", cost)
		}
	}
	text := stdout.String()
	for _, want := range []string{"security: protocol 2 of 3, SSL", "security: each mode over PLAINTEXT, SSL, SASL_SSL (SASL: SCRAM-SHA-512)",
		"transactional@100ms  SASL_SSL", "consume CPU per GB, one consumer reading 4 MiB from the start, median of 2 passes"} {
		if !strings.Contains(text, want) {
			t.Errorf("stdout lacks %q:\n%s", want, text)
		}
	}
	page, err := os.ReadFile(strings.TrimSuffix(resultsPath(t, dir), ".json") + ".html")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`id="security"`, "SASL_SSL", "consume CPU per GB"} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("dashboard lacks %q", want)
		}
	}
}

// runKfakeSecurityWorkload runs `exactly loadgen` on workload (a
// workload file's text) with extra args over kfakeSecurityListeners, and
// fails unless it exits 0; it returns the results directory and stdout.
func runKfakeSecurityWorkload(t *testing.T, workload string, args ...string) (string, *bytes.Buffer) {
	t.Helper()
	asExactlySelf(t)
	old := startSecurityListeners
	startSecurityListeners = kfakeSecurityListeners(t)
	t.Cleanup(func() { startSecurityListeners = old })
	dir := t.TempDir()
	workloadFile := filepath.Join(dir, "security-test.yaml")
	if err := os.WriteFile(workloadFile, []byte(workload), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run(append([]string{"loadgen", "--workload", workloadFile, "--out", dir}, args...), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, stderr.String(), stdout.String())
	}
	return dir, &stdout
}

// resultsPath is the one results file in dir.
func resultsPath(t *testing.T, dir string) string {
	t.Helper()
	matches, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(matches) != 1 {
		t.Fatalf("results files %v, want one", matches)
	}
	return matches[0]
}

// The security workload on the embedded broker itself: three listeners
// (PLAINTEXT, SSL, SASL_SSL with a SCRAM-SHA-512 user), every mode over
// each passing its checks, every cell and consume cost filled, the TLS
// fetch path named.
func TestSecurityWorkloadOnEmbeddedBroker(t *testing.T) {
	t.Parallel()
	asExactlySelf(t)
	dir := t.TempDir()
	workloadFile := filepath.Join(dir, "security-test.yaml")
	if err := os.WriteFile(workloadFile, []byte(securityTestWorkload), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run([]string{"loadgen", "--workload", workloadFile, "--out", dir}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, stderr.String(), stdout.String())
	}
	section := readOnlyResults(t, dir).Security
	if section == nil || len(section.Cells) != 6 || len(section.Consume) != 3 {
		t.Fatalf("security section %+v, want 6 cells and 3 consume costs", section)
	}
	for _, cell := range section.Cells {
		if cell.Status != report.StatusPass || cell.RecordsPerSecond <= 0 || cell.AckP99Ratio <= 0 || cell.EndToEndP99Millis <= 0 {
			t.Errorf("cell %+v is not a filled pass", cell)
		}
	}
	for _, cost := range section.Consume {
		want := "copy (TLS)"
		if cost.Protocol == "PLAINTEXT" {
			want = "sendfile"
		}
		if cost.Error != "" || cost.CPUSecondsPerGB <= 0 || cost.FetchPath != want {
			t.Errorf("consume cost %+v, want measured with fetch path %q", cost, want)
		}
	}
}

// With --rounds 2 the security workload runs every protocol, and
// PLAINTEXT a second time as its A/A slot, once per round in rotated
// order; the table gives each protocol's median ratio with an interval
// and the A/A row as the noise floor, the consume costs a pass-paired
// ratio, and the dashboard says so.
func TestSecurityWorkloadRounds(t *testing.T) {
	oneMode := strings.Replace(securityTestWorkload, "modes: [at-least-once, transactional]", "modes: [at-least-once]", 1)
	oneMode = strings.Replace(oneMode, "records: 400", "records: 200", 1)
	dir, stdout := runKfakeSecurityWorkload(t, oneMode, "--rounds", "2")
	results := readOnlyResults(t, dir)
	section := results.Security
	if section == nil || section.Rounds != 2 {
		t.Fatalf("security section %+v, want 2 rounds", section)
	}
	wantProtocols := []string{"PLAINTEXT", "SSL", "SASL_SSL", "PLAINTEXT (A/A)"}
	if strings.Join(section.Protocols, ",") != strings.Join(wantProtocols, ",") {
		t.Fatalf("protocols %v, want %v", section.Protocols, wantProtocols)
	}
	if len(results.Runs) != 8 || len(section.Cells) != 8 {
		t.Fatalf("%d runs, %d cells; want 8 (1 mode x 4 slots x 2 rounds)", len(results.Runs), len(section.Cells))
	}
	for _, protocol := range wantProtocols {
		for round := 1; round <= 2; round++ {
			cell := section.RoundCell("at-least-once", protocol, round)
			if cell == nil || cell.Status != report.StatusPass || cell.ThroughputRatio <= 0 {
				t.Errorf("round %d over %s: cell %+v, want a pass with a ratio", round, protocol, cell)
			}
		}
	}
	if len(section.Rows) != 4 {
		t.Fatalf("rows %+v, want 4", section.Rows)
	}
	for i, row := range section.Rows {
		if row.Protocol != wantProtocols[i] || len(row.Runs) != 2 {
			t.Errorf("row %d: %s with runs %v, want %s with 2", i, row.Protocol, row.Runs, wantProtocols[i])
		}
		switch {
		case row.Reference:
			if len(row.Throughput.Ratios) != 0 || row.Throughput.Median() <= 0 {
				t.Errorf("reference row %+v: want values, no ratios", row)
			}
		default:
			if len(row.Throughput.Ratios) != 2 || row.Throughput.CILow <= 0 || row.Throughput.CILow > row.Throughput.MedianRatio ||
				row.Throughput.CIHigh < row.Throughput.MedianRatio || row.Throughput.Verdict == "" || len(row.AckP99.Ratios) != 2 {
				t.Errorf("row %s: throughput %+v, ack p99 %+v; want 2 ratios with an interval and a verdict", row.Protocol, row.Throughput, row.AckP99)
			}
		}
		if row.NoiseFloor != (row.Protocol == "PLAINTEXT (A/A)") {
			t.Errorf("row %s: noise floor %v", row.Protocol, row.NoiseFloor)
		}
	}
	if len(section.Consume) != 4 {
		t.Fatalf("consume costs %+v, want 4 (A/A included)", section.Consume)
	}
	for _, cost := range section.Consume {
		if cost.Protocol != "PLAINTEXT" && (cost.PassRatios == nil || len(cost.PassRatios.Ratios) != 2) {
			t.Errorf("consume cost %s: pass ratios %+v, want 2", cost.Protocol, cost.PassRatios)
		}
	}
	text := stdout.String()
	for _, want := range []string{"security: round 1 of 2, PLAINTEXT (1 of 8)", "security: round 2 of 2, SSL (5 of 8)",
		"2 interleaved rounds", "noise floor", "at-least-once  SASL_SSL", "paired by pass [95% CI]"} {
		if !strings.Contains(text, want) {
			t.Errorf("stdout lacks %q:\n%s", want, text)
		}
	}
	page, err := os.ReadFile(strings.TrimSuffix(resultsPath(t, dir), ".json") + ".html")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"PLAINTEXT (A/A)", "2 interleaved rounds", "2/2 pass", "A/A) is the noise floor"} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("dashboard lacks %q", want)
		}
	}
}
