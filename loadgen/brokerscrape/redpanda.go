package brokerscrape

import (
	"github.com/exactly-eos/exactly/loadgen/report"
)

// Redpanda's public metrics, /public_metrics on the admin port (9644), as
// Redpanda's "Public Metrics" reference documents them:
// redpanda_kafka_handler_latency_seconds{handler="produce"|"fetch"} (a
// histogram from receiving a request to sending its response; 23.1.18+,
// 23.2.12+), the older redpanda_kafka_request_latency_seconds
// {redpanda_request="produce"|"consume"},
// redpanda_kafka_request_bytes_total{redpanda_namespace, redpanda_topic,
// redpanda_request="produce"|"consume"},
// redpanda_kafka_records_produced_total and the gauge
// redpanda_kafka_under_replicated_replicas{redpanda_namespace,
// redpanda_topic, redpanda_partition}. No transaction, marker, fsync or
// per-API split is public.
const (
	redpandaPrefix          = "redpanda_"
	redpandaHandlerLatency  = "redpanda_kafka_handler_latency_seconds"
	redpandaRequestLatency  = "redpanda_kafka_request_latency_seconds"
	redpandaRequestBytes    = "redpanda_kafka_request_bytes_total"
	redpandaRecordsProduced = "redpanda_kafka_records_produced_total"
	redpandaUnderReplicated = "redpanda_kafka_under_replicated_replicas"
)

// redpandaAPIs are the APIs Redpanda times publicly: the API, its handler
// label, and its label in the older request latency.
var redpandaAPIs = []struct{ api, handler, request string }{
	{"Produce", "produce", "produce"},
	{"Fetch", "fetch", "consume"},
}

// fillRedpanda sets the figures from Redpanda's public names.
func fillRedpanda(out *report.BrokerMetrics, d *deltas) {
	family, label := redpandaHandlerLatency, "handler"
	if !d.has(redpandaHandlerLatency) {
		family, label = redpandaRequestLatency, "redpanda_request"
	}
	for _, timed := range redpandaAPIs {
		value := timed.handler
		if label == "redpanda_request" {
			value = timed.request
		}
		h := d.histogram(family, map[string]string{label: value})
		if h.count <= 0 {
			continue
		}
		out.APIs = append(out.APIs, report.APITime{API: timed.api, Requests: tidy(h.count), TotalMs: h.sum / h.count * 1000,
			TotalP99Ms: finite(h.quantile(0.99)) * 1000, TotalOnly: true})
	}
	out.BytesIn = optional(d.count(redpandaRequestBytes, map[string]string{"redpanda_request": "produce"}))
	out.BytesOut = optional(d.count(redpandaRequestBytes, map[string]string{"redpanda_request": "consume"}))
	out.RecordsIn = optional(d.count(redpandaRecordsProduced, nil))
	out.UnderReplicatedReplicas = optional(d.level(redpandaUnderReplicated, nil))
	note := "Redpanda's /public_metrics time Produce and Fetch requests whole (" + family + "), as means over the cell " +
		"and p99 from its buckets: no queue / local / durability / send split, and no time for EndTxn, AddPartitionsToTxn or TxnOffsetCommit"
	if family == redpandaRequestLatency {
		note += "; this Redpanda lacks redpanda_kafka_handler_latency_seconds (23.1.18+, 23.2.12+), so the times are the older " +
			"per-partition request latency, Fetch's labelled consume"
	}
	out.Notes = append(out.Notes, note,
		"Redpanda publishes no count of fsyncs, transaction markers, committed or aborted transactions or dropped duplicates: "+
			"those figures are absent; under-replicated counts replicas, not partitions")
}
