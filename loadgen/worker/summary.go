package worker

// Summary is what a load worker measured since its previous summary: the
// runner adds the counts and merges the histograms into the run's (and the
// worker's own share), so percentiles come from merged histograms, never
// from averaged percentiles. A worker sends one about every
// SummaryInterval and a last one before it exits.
type Summary struct {
	// Acked counts records acknowledged (warm-up included), AckedBytes
	// their value bytes; Measured and MeasuredBytes the acknowledged
	// records sent after the warm-up.
	Acked         int64 `json:"acked,omitempty"`
	AckedBytes    int64 `json:"acked_bytes,omitempty"`
	Measured      int64 `json:"measured,omitempty"`
	MeasuredBytes int64 `json:"measured_bytes,omitempty"`
	Errors        int64 `json:"errors,omitempty"`
	// Received counts records a live consumer received.
	Received int64 `json:"received,omitempty"`
	Retries  int64 `json:"retries,omitempty"`
	// Histograms holds HdrHistograms of microseconds (EncodeHistogram),
	// by name: produce_ack, produce_ack_uncorrected, commit and window
	// (every ack, for the runner's per-second p99).
	Histograms   map[string][]byte `json:"histograms,omitempty"`
	ErrorsByCode map[string]int64  `json:"errors_by_code,omitempty"`
	Committed    int64             `json:"committed,omitempty"`
	Aborted      int64             `json:"aborted,omitempty"`
	Failed       int64             `json:"failed,omitempty"`
	// Unsupported is why the target cannot run the mode (its producers
	// stopped), the first time the worker learnt it.
	Unsupported string `json:"unsupported,omitempty"`
	// CPUNanos is the worker process's CPU time (user and system) so far,
	// StreamNanos the CPU time of the thread that takes, encodes,
	// compresses and writes its reports (the record batches and the
	// summaries), and StreamBytes the bytes those reports took on the
	// wire, so far. The ops a producer's callbacks append to the record
	// stream run on the producers' threads and are not in StreamNanos
	// (BenchmarkReportStream measures them with the rest).
	CPUNanos    int64 `json:"cpu_ns,omitempty"`
	StreamNanos int64 `json:"stream_ns,omitempty"`
	StreamBytes int64 `json:"stream_bytes,omitempty"`
	// Final marks the worker's last summary: its producers finished.
	Final bool `json:"final,omitempty"`
}
