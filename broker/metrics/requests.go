package metrics

import (
	"fmt"
	"math"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
)

// This file decides which per-API request-time series carry buckets.
//
// Five histogram families split each request's time by API:
// exactly_request_total_seconds and its stages queue, local, durability
// wait and send. With 20 buckets each, an API costs 115 lines of
// /metrics, and a broker that served a few clients lists some twenty
// APIs. Most of those buckets answer nothing anyone asks, so by default
// (RequestHistogramsDefault) only the total time of the APIs that carry
// a workload (HotAPIs) has buckets; every other series of the five
// families is a bucketless histogram: its _sum, _count and the +Inf
// bucket, enough for rates and means (sum / count) but not for
// histogram_quantile. RequestHistogramsAll brings every bucket back,
// RequestHistogramsNone leaves none. The broker setting
// metrics.request.histograms chooses (the broker's settings table,
// brokerSettings).
//
// A family keeps one name and one type whatever the choice: its series
// with buckets and its bucketless series are two HistogramVecs collected
// as one family (requestFamily), so queries by name and label work the
// same on either kind of series.
//
// exactly_request_durability_wait_seconds has a series for Produce only:
// no other API waits for durability, so its series would observe nothing
// but zeros.

// RequestHistograms is which per-API request-time series have buckets
// (the broker setting metrics.request.histograms).
type RequestHistograms int8

const (
	// RequestHistogramsDefault gives buckets to
	// exactly_request_total_seconds of the HotAPIs only.
	RequestHistogramsDefault RequestHistograms = iota
	// RequestHistogramsAll gives buckets to every per-API series.
	RequestHistogramsAll
	// RequestHistogramsNone gives buckets to no per-API series.
	RequestHistogramsNone
)

// requestHistogramNames are the setting's values, by RequestHistograms.
var requestHistogramNames = []string{
	RequestHistogramsDefault: "default",
	RequestHistogramsAll:     "all",
	RequestHistogramsNone:    "none",
}

// String is the setting's value for h.
func (h RequestHistograms) String() string {
	if h >= 0 && int(h) < len(requestHistogramNames) {
		return requestHistogramNames[h]
	}
	return fmt.Sprintf("RequestHistograms(%d)", int8(h))
}

// ParseRequestHistograms parses a metrics.request.histograms value:
// default, all or none.
func ParseRequestHistograms(v string) (RequestHistograms, error) {
	if i := slices.Index(requestHistogramNames, v); i >= 0 {
		return RequestHistograms(i), nil
	}
	return 0, fmt.Errorf("%q is not default, all or none", v)
}

// HotAPIs are the Kafka APIs (by wire.APIName's names) whose
// exactly_request_total_seconds has buckets by default: the data path
// (Produce, Fetch), the transaction APIs and the consumer group APIs a
// running consumer keeps sending. Metadata, ApiVersions, FindCoordinator,
// ListOffsets and the admin APIs are not among them: clients send them
// at start and now and then.
var HotAPIs = []string{
	"Produce", "Fetch",
	"InitProducerID", "AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn", "WriteTxnMarkers", "TxnOffsetCommit",
	"JoinGroup", "SyncGroup", "Heartbeat", "OffsetCommit", "OffsetFetch", "ConsumerGroupHeartbeat",
}

// durabilityAPI is the one API that waits for durability (acks=all).
const durabilityAPI = "Produce"

// noBuckets makes a histogram without finite buckets: only +Inf, which
// client_golang keeps implicit (an empty Buckets would mean DefBuckets).
var noBuckets = []float64{math.Inf(+1)}

// requestFamily is one per-API request-time histogram family: the series
// with buckets in bucketed, the bucketless ones in plain, collected as
// one family (the two vecs have equal descriptors).
type requestFamily struct {
	bucketed, plain *prometheus.HistogramVec
	// stage is true for the stage families, false for the total time.
	stage bool
}

func newRequestFamily(name, help string, stage bool) *requestFamily {
	vec := func(buckets []float64) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, []string{"api"})
	}
	return &requestFamily{bucketed: vec(latencyBuckets), plain: vec(noBuckets), stage: stage}
}

// Describe sends the family's one descriptor.
func (f *requestFamily) Describe(ch chan<- *prometheus.Desc) { f.bucketed.Describe(ch) }

// Collect sends the series of both kinds.
func (f *requestFamily) Collect(ch chan<- prometheus.Metric) {
	f.bucketed.Collect(ch)
	f.plain.Collect(ch)
}

// observer is api's series under h, in one vec or the other.
func (f *requestFamily) observer(h RequestHistograms, api string) prometheus.Observer {
	buckets := false
	switch h {
	case RequestHistogramsAll:
		buckets = true
	case RequestHistogramsDefault:
		buckets = !f.stage && slices.Contains(HotAPIs, api)
	}
	if buckets {
		return f.bucketed.WithLabelValues(api)
	}
	return f.plain.WithLabelValues(api)
}

func (f *requestFamily) reset() {
	f.bucketed.Reset()
	f.plain.Reset()
}

// discard is the observer of a series that is not kept.
type discard struct{}

func (discard) Observe(float64) {}

// SetRequestHistograms chooses which per-API request-time series have
// buckets; the broker calls it at start with its metrics.request.histograms
// setting, before serving. A change drops the per-API request-time series
// observed so far (a series moves between kinds); the request counts stay.
func (m *Broker) SetRequestHistograms(h RequestHistograms) {
	m.apisMu.Lock()
	defer m.apisMu.Unlock()
	if h == m.histograms {
		return
	}
	m.histograms = h
	for i := range m.apis {
		m.apis[i].Store(nil)
	}
	for _, f := range m.requestFamilies() {
		f.reset()
	}
}

// requestFamilies are the five per-API request-time families.
func (m *Broker) requestFamilies() []*requestFamily {
	return []*requestFamily{m.queueSeconds, m.localSeconds, m.durabilitySecs, m.sendSeconds, m.totalSeconds}
}

// API returns the request metrics of the API with the given key and
// Kafka name, cached per key.
func (m *Broker) API(key int16, name string) *API {
	cached := key >= 0 && int(key) < maxAPIKey
	if cached {
		if a := m.apis[key].Load(); a != nil {
			return a
		}
	}
	m.apisMu.Lock()
	defer m.apisMu.Unlock()
	if cached {
		if a := m.apis[key].Load(); a != nil {
			return a
		}
	}
	h := m.histograms
	a := &API{
		Requests:   m.requests.WithLabelValues(name),
		Queue:      m.queueSeconds.observer(h, name),
		Local:      m.localSeconds.observer(h, name),
		Durability: discard{},
		Send:       m.sendSeconds.observer(h, name),
		Total:      m.totalSeconds.observer(h, name),
		name:       name,
		errors:     m.requestErrors,
	}
	if name == durabilityAPI {
		a.Durability = m.durabilitySecs.observer(h, name)
	}
	if cached {
		m.apis[key].Store(a)
	}
	return a
}
