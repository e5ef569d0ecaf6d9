package main

// The table of Kafka APIs the broker serves, next to Kafka 4.x's, for
// docs/compatibility.md (between the served-apis markers) and for
// `exactly broker --help`. Both are generated from broker.ServedAPIs, the
// handler registry ApiVersions answers from, so a newly registered API
// shows up by itself; TestServedAPITable fails until the page is
// regenerated:
//
//go:generate go test -run TestServedAPITable -update

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker"
)

// versionRange is an inclusive range of API versions; none marks an API
// a release does not have.
type versionRange struct{ min, max int16 }

var none = versionRange{-1, -1}

func (r versionRange) present() bool { return r.max >= 0 }

// text writes the range as "3–13" (dash given), or "0" for one version,
// or "—" for none.
func (r versionRange) text(dash string) string {
	switch {
	case !r.present():
		return "—"
	case r.min == r.max:
		return fmt.Sprint(r.min)
	}
	return fmt.Sprintf("%d%s%d", r.min, dash, r.max)
}

// kafkaAPI is one API a Kafka 4.x broker answers on its client listeners.
type kafkaAPI struct {
	key      int16
	name     string // Kafka's name (its message definition, without "Request")
	v40, v41 versionRange
	// betweenBrokers: only other brokers send it; it is not listed as
	// missing when we do not serve it.
	betweenBrokers bool
	note           string // why it may be absent, for the list of APIs not served
}

// kafka4 holds the versions Apache Kafka 4.0.0 and 4.1.0 brokers advertise
// in ApiVersions, by default, for every API they answer on a client
// (broker) listener. Where it came from: Kafka's message definitions,
// clients/src/main/resources/common/message/*Request.json at the 4.0.0
// and 4.1.0 releases ("validVersions", without a newest version marked
// "latestVersionUnstable", which brokers advertise only when
// unstable.api.versions.enable is set), with two corrections from Kafka's
// own code and issues: Produce v0–2 are listed by Kafka 4.x's ApiVersions
// (KAFKA-18659, for old librdkafka) but refused, so Produce starts at 3
// here; JoinGroup v0–1, removed in 4.0.0 (KIP-896), came back in 4.0.1
// and 4.1.0 (KAFKA-19444). The newest versions agree with franz-go's
// kversion.V4_0_0 and V4_1_0, which record real brokers' answers
// (TestKafka4TableAgreesWithKversion).
//
// Left out: the APIs only the KRaft controllers answer (Vote,
// BeginQuorumEpoch, EndQuorumEpoch, AlterPartition, Envelope,
// FetchSnapshot, BrokerRegistration, BrokerHeartbeat, AllocateProducerIds,
// ControllerRegistration, AssignReplicasToDirs, UpdateRaftVoter); the share
// coordinator's state APIs (keys 83–87), which only brokers send; the
// streams group APIs (88, 89), not advertised by default in 4.1 (early
// access); the ZooKeeper-era APIs 4.0 removed (LeaderAndIsr, StopReplica,
// UpdateMetadata, ControlledShutdown).
var kafka4 = []kafkaAPI{
	{key: 0, name: "Produce", v40: versionRange{3, 12}, v41: versionRange{3, 13}},
	{key: 1, name: "Fetch", v40: versionRange{4, 17}, v41: versionRange{4, 18}},
	{key: 2, name: "ListOffsets", v40: versionRange{1, 10}, v41: versionRange{1, 10}},
	{key: 3, name: "Metadata", v40: versionRange{0, 13}, v41: versionRange{0, 13}},
	{key: 8, name: "OffsetCommit", v40: versionRange{2, 9}, v41: versionRange{2, 9}},
	{key: 9, name: "OffsetFetch", v40: versionRange{1, 9}, v41: versionRange{1, 9}},
	{key: 10, name: "FindCoordinator", v40: versionRange{0, 6}, v41: versionRange{0, 6}},
	{key: 11, name: "JoinGroup", v40: versionRange{2, 9}, v41: versionRange{0, 9}},
	{key: 12, name: "Heartbeat", v40: versionRange{0, 4}, v41: versionRange{0, 4}},
	{key: 13, name: "LeaveGroup", v40: versionRange{0, 5}, v41: versionRange{0, 5}},
	{key: 14, name: "SyncGroup", v40: versionRange{0, 5}, v41: versionRange{0, 5}},
	{key: 15, name: "DescribeGroups", v40: versionRange{0, 6}, v41: versionRange{0, 6}},
	{key: 16, name: "ListGroups", v40: versionRange{0, 5}, v41: versionRange{0, 5}},
	{key: 17, name: "SaslHandshake", v40: versionRange{0, 1}, v41: versionRange{0, 1}},
	{key: 18, name: "ApiVersions", v40: versionRange{0, 4}, v41: versionRange{0, 4}},
	{key: 19, name: "CreateTopics", v40: versionRange{2, 7}, v41: versionRange{2, 7}},
	{key: 20, name: "DeleteTopics", v40: versionRange{1, 6}, v41: versionRange{1, 6}},
	{key: 21, name: "DeleteRecords", v40: versionRange{0, 2}, v41: versionRange{0, 2}},
	{key: 22, name: "InitProducerId", v40: versionRange{0, 5}, v41: versionRange{0, 5}},
	{key: 23, name: "OffsetForLeaderEpoch", v40: versionRange{2, 4}, v41: versionRange{2, 4}},
	{key: 24, name: "AddPartitionsToTxn", v40: versionRange{0, 5}, v41: versionRange{0, 5}},
	{key: 25, name: "AddOffsetsToTxn", v40: versionRange{0, 4}, v41: versionRange{0, 4}},
	{key: 26, name: "EndTxn", v40: versionRange{0, 5}, v41: versionRange{0, 5}},
	{key: 27, name: "WriteTxnMarkers", v40: versionRange{1, 1}, v41: versionRange{1, 1}, betweenBrokers: true},
	{key: 28, name: "TxnOffsetCommit", v40: versionRange{0, 5}, v41: versionRange{0, 5}},
	{key: 29, name: "DescribeAcls", v40: versionRange{1, 3}, v41: versionRange{1, 3}},
	{key: 30, name: "CreateAcls", v40: versionRange{1, 3}, v41: versionRange{1, 3}},
	{key: 31, name: "DeleteAcls", v40: versionRange{1, 3}, v41: versionRange{1, 3}},
	{key: 32, name: "DescribeConfigs", v40: versionRange{1, 4}, v41: versionRange{1, 4}},
	{key: 33, name: "AlterConfigs", v40: versionRange{0, 2}, v41: versionRange{0, 2}},
	{key: 34, name: "AlterReplicaLogDirs", v40: versionRange{1, 2}, v41: versionRange{1, 2}},
	{key: 35, name: "DescribeLogDirs", v40: versionRange{1, 4}, v41: versionRange{1, 4}},
	{key: 36, name: "SaslAuthenticate", v40: versionRange{0, 2}, v41: versionRange{0, 2}},
	{key: 37, name: "CreatePartitions", v40: versionRange{0, 3}, v41: versionRange{0, 3}},
	{key: 38, name: "CreateDelegationToken", v40: versionRange{1, 3}, v41: versionRange{1, 3}},
	{key: 39, name: "RenewDelegationToken", v40: versionRange{1, 2}, v41: versionRange{1, 2}},
	{key: 40, name: "ExpireDelegationToken", v40: versionRange{1, 2}, v41: versionRange{1, 2}},
	{key: 41, name: "DescribeDelegationToken", v40: versionRange{1, 3}, v41: versionRange{1, 3}},
	{key: 42, name: "DeleteGroups", v40: versionRange{0, 2}, v41: versionRange{0, 2}},
	{key: 43, name: "ElectLeaders", v40: versionRange{0, 2}, v41: versionRange{0, 2}},
	{key: 44, name: "IncrementalAlterConfigs", v40: versionRange{0, 1}, v41: versionRange{0, 1}},
	{key: 45, name: "AlterPartitionReassignments", v40: versionRange{0, 0}, v41: versionRange{0, 1}},
	{key: 46, name: "ListPartitionReassignments", v40: versionRange{0, 0}, v41: versionRange{0, 0}},
	{key: 47, name: "OffsetDelete", v40: versionRange{0, 0}, v41: versionRange{0, 0}},
	{key: 48, name: "DescribeClientQuotas", v40: versionRange{0, 1}, v41: versionRange{0, 1}},
	{key: 49, name: "AlterClientQuotas", v40: versionRange{0, 1}, v41: versionRange{0, 1}},
	{key: 50, name: "DescribeUserScramCredentials", v40: versionRange{0, 0}, v41: versionRange{0, 0}},
	{key: 51, name: "AlterUserScramCredentials", v40: versionRange{0, 0}, v41: versionRange{0, 0}},
	{key: 55, name: "DescribeQuorum", v40: versionRange{0, 2}, v41: versionRange{0, 2}},
	{key: 57, name: "UpdateFeatures", v40: versionRange{0, 2}, v41: versionRange{0, 2}},
	{key: 60, name: "DescribeCluster", v40: versionRange{0, 2}, v41: versionRange{0, 2}},
	{key: 61, name: "DescribeProducers", v40: versionRange{0, 0}, v41: versionRange{0, 0}},
	{key: 64, name: "UnregisterBroker", v40: versionRange{0, 0}, v41: versionRange{0, 0}},
	{key: 65, name: "DescribeTransactions", v40: versionRange{0, 0}, v41: versionRange{0, 0}},
	{key: 66, name: "ListTransactions", v40: versionRange{0, 1}, v41: versionRange{0, 2}},
	{key: 68, name: "ConsumerGroupHeartbeat", v40: versionRange{0, 1}, v41: versionRange{0, 1}},
	{key: 69, name: "ConsumerGroupDescribe", v40: versionRange{0, 1}, v41: versionRange{0, 1}},
	{key: 71, name: "GetTelemetrySubscriptions", v40: versionRange{0, 0}, v41: versionRange{0, 0},
		note: "client metrics (KIP-714); Kafka lists it only with a client-metrics plugin configured"},
	{key: 72, name: "PushTelemetry", v40: versionRange{0, 0}, v41: versionRange{0, 0},
		note: "client metrics (KIP-714); Kafka lists it only with a client-metrics plugin configured"},
	{key: 74, name: "ListConfigResources", v40: versionRange{0, 0}, v41: versionRange{0, 1},
		note: "ListClientMetricsResources in Kafka 4.0"},
	{key: 75, name: "DescribeTopicPartitions", v40: versionRange{0, 0}, v41: versionRange{0, 0}},
	{key: 76, name: "ShareGroupHeartbeat", v40: none, v41: versionRange{1, 1}, note: "share groups (KIP-932)"},
	{key: 77, name: "ShareGroupDescribe", v40: none, v41: versionRange{1, 1}, note: "share groups (KIP-932)"},
	{key: 78, name: "ShareFetch", v40: none, v41: versionRange{1, 1}, note: "share groups (KIP-932)"},
	{key: 79, name: "ShareAcknowledge", v40: none, v41: versionRange{1, 1}, note: "share groups (KIP-932)"},
	{key: 80, name: "AddRaftVoter", v40: versionRange{0, 0}, v41: versionRange{0, 0}, note: "changes the KRaft controller quorum"},
	{key: 81, name: "RemoveRaftVoter", v40: versionRange{0, 0}, v41: versionRange{0, 0}, note: "changes the KRaft controller quorum"},
	{key: 90, name: "DescribeShareGroupOffsets", v40: none, v41: versionRange{0, 0}, note: "share groups (KIP-932)"},
	{key: 91, name: "AlterShareGroupOffsets", v40: none, v41: versionRange{0, 0}, note: "share groups (KIP-932)"},
	{key: 92, name: "DeleteShareGroupOffsets", v40: none, v41: versionRange{0, 0}, note: "share groups (KIP-932)"},
}

// kafka4ByKey finds an API in kafka4.
func kafka4ByKey(key int16) (kafkaAPI, bool) {
	for _, k := range kafka4 {
		if k.key == key {
			return k, true
		}
	}
	return kafkaAPI{}, false
}

// servedRow is one served API with what it is compared with.
type servedRow struct {
	name    string // Kafka's name, or franz-go's for an API Kafka 4.x brokers do not answer
	key     int16
	served  versionRange
	kafka   kafkaAPI
	inKafka bool
	franz   int16 // the newest version franz-go's kmsg knows; -1 if it knows none
}

// servedRows lists broker.ServedAPIs by key.
func servedRows() []servedRow {
	var rows []servedRow
	for _, s := range broker.ServedAPIs() {
		row := servedRow{name: s.Name, key: s.Key, served: versionRange{s.Min, s.Max}, franz: -1}
		row.kafka, row.inKafka = kafka4ByKey(s.Key)
		if row.inKafka {
			row.name = row.kafka.name
		}
		if req := kmsg.RequestForKey(s.Key); req != nil {
			row.franz = req.MaxVersion()
		}
		rows = append(rows, row)
	}
	return rows
}

// difference says in words how the served range differs from Kafka 4.1's,
// or "" when it is the same.
func (r servedRow) difference(dash string) string {
	if !r.inKafka || !r.kafka.v41.present() {
		return "not served by Kafka 4.1"
	}
	k := r.kafka.v41
	span := func(a, b int16) string {
		if a == b {
			return fmt.Sprintf("v%d", a)
		}
		return fmt.Sprintf("v%d%s%d", a, dash, b)
	}
	var parts []string
	if r.served.min < k.min {
		parts = append(parts, "also older "+span(r.served.min, k.min-1))
	}
	if r.served.min > k.min {
		parts = append(parts, "lacks "+span(k.min, r.served.min-1))
	}
	if r.served.max > k.max {
		parts = append(parts, "also newer "+span(k.max+1, r.served.max))
	}
	if r.served.max < k.max {
		parts = append(parts, "lacks "+span(r.served.max+1, k.max))
	}
	return strings.Join(parts, "; ")
}

// missingAPIs lists the Kafka 4.x client APIs the broker does not serve.
func missingAPIs(rows []servedRow) []kafkaAPI {
	served := map[int16]bool{}
	for _, r := range rows {
		served[r.key] = true
	}
	var out []kafkaAPI
	for _, k := range kafka4 {
		if !served[k.key] && !k.betweenBrokers {
			out = append(out, k)
		}
	}
	return out
}

// servedAPIsMarkdown is the part of docs/compatibility.md between the
// served-apis markers (the markers not included).
func servedAPIsMarkdown() string {
	rows := servedRows()
	var b strings.Builder
	differ := 0
	for _, r := range rows {
		if r.difference("–") != "" {
			differ++
		}
	}
	b.WriteString("<!-- Generated from the broker's handler registry: do not edit by hand.\n")
	b.WriteString("     To update it: go test ./cmd/exactly -run TestServedAPITable -update -->\n\n")
	fmt.Fprintf(&b, "The broker serves %d Kafka APIs. For each: the versions it serves (what\n", len(rows))
	b.WriteString("ApiVersions advertises), the versions Kafka 4.0 and 4.1 brokers serve,\n")
	b.WriteString("the newest version franz-go (the `kmsg` package in `go.mod`) knows, and how\n")
	fmt.Fprintf(&b, "our range differs from Kafka 4.1's (%d APIs differ). Serving older versions\n", differ)
	b.WriteString("than Kafka 4.x keeps old clients working; clients use the newest version both\n")
	b.WriteString("sides serve, so a missing newest version only means clients use the one\n")
	b.WriteString("before it.\n\n")
	b.WriteString("| API (key) | we serve | Kafka 4.0 | Kafka 4.1 | newest in franz-go | compared with Kafka 4.1 |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	for _, r := range rows {
		franz := "—"
		if r.franz >= 0 {
			franz = fmt.Sprint(r.franz)
		}
		v40, v41 := none, none
		if r.inKafka {
			v40, v41 = r.kafka.v40, r.kafka.v41
		}
		diff := r.difference("–")
		if diff == "" {
			diff = "same"
		} else {
			diff = "**differs**: " + diff
		}
		fmt.Fprintf(&b, "| %s (%d) | %s | %s | %s | %s | %s |\n", r.name, r.key, r.served.text("–"), v40.text("–"), v41.text("–"), franz, diff)
	}
	b.WriteString("\nKafka 4.x lists Produce v0–2 in ApiVersions too (for old librdkafka,\n")
	b.WriteString("KAFKA-18659) but refuses them; JoinGroup v0–1, removed in 4.0.0, are back in\n")
	b.WriteString("4.0.1 and 4.1.\n\n")
	missing := missingAPIs(rows)
	fmt.Fprintf(&b, "### Kafka APIs not served\n\n")
	fmt.Fprintf(&b, "The Kafka 4.x APIs that clients and admin tools send and the broker does\n")
	fmt.Fprintf(&b, "not answer (%d). ApiVersions does not list them, so a client learns they are\n", len(missing))
	b.WriteString("missing before it asks; a request for one closes the connection, as Kafka\n")
	b.WriteString("does for an API it does not serve.\n\n")
	for _, k := range missing {
		if k.v40.present() {
			fmt.Fprintf(&b, "- %s (%d): Kafka 4.0 v%s, 4.1 v%s", k.name, k.key, k.v40.text("–"), k.v41.text("–"))
		} else {
			fmt.Fprintf(&b, "- %s (%d): Kafka 4.1 v%s, not in 4.0", k.name, k.key, k.v41.text("–"))
		}
		if k.note != "" {
			fmt.Fprintf(&b, "; %s", k.note)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// servedAPIsHelp is the compact listing `exactly broker --help` ends its
// description with, wrapped for an 80-column terminal.
func servedAPIsHelp() string {
	rows := servedRows()
	var served []string
	for _, r := range rows {
		mark := ""
		if r.difference("-") != "" {
			mark = "*"
		}
		served = append(served, fmt.Sprintf("%s %s%s", r.name, r.served.text("-"), mark))
	}
	var missing []string
	for _, k := range missingAPIs(rows) {
		missing = append(missing, k.name)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Kafka APIs served (%d) and their versions; * marks a range that differs\n", len(rows))
	b.WriteString("from Kafka 4.1's (docs/compatibility.md compares them side by side):\n")
	for _, line := range packItems(served, helpListWidth) {
		b.WriteString("  " + line + "\n")
	}
	fmt.Fprintf(&b, "Kafka 4.x APIs not served (%d):\n", len(missing))
	lines := packItems(missing, helpListWidth)
	for i, line := range lines {
		b.WriteString("  " + line)
		if i < len(lines)-1 {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// helpListWidth is the width of the help's API lists after their two-space
// indent: the lines fit an 80-column terminal.
const helpListWidth = 76

// packItems joins items with ", " into lines of at most width runes,
// never breaking an item (an API's name stays beside its versions).
func packItems(items []string, width int) []string {
	var lines []string
	line := ""
	for i, item := range items {
		if i < len(items)-1 {
			item += ","
		}
		switch {
		case line == "":
			line = item
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(item) > width:
			lines = append(lines, line)
			line = item
		default:
			line += " " + item
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}
