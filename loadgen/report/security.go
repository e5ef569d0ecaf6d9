package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Security is the result of the security workload (`exactly loadgen
// --workload security`): the delivery modes run over each security
// protocol of one broker, and what consuming costs over each. Added
// within schema version 1; omitted from other results.
type Security struct {
	// Protocols are the security protocols in the order they ran; the
	// first is the reference the ratios are against (PLAINTEXT when it
	// ran).
	Protocols []string `json:"protocols"`
	// Reference is the protocol the ratios divide by.
	Reference string `json:"reference"`
	// Mechanism is the SASL mechanism of the SASL protocols ("" if none
	// ran).
	Mechanism string `json:"mechanism,omitempty"`
	// Rate is the offered load of every run (0: saturation).
	Rate int `json:"rate"`
	// Rounds is how many interleaved rounds ran (0 or 1: one). With 2 or
	// more, Protocols ends with the reference's A/A slot and Rows holds
	// the ratios over the rounds.
	Rounds int `json:"rounds,omitempty"`
	// Cells are one run of a mode over a protocol in a round, by mode in
	// the order the modes ran, then by protocol, then by round.
	Cells []SecurityCell `json:"cells"`
	// Rows summarize each mode over each protocol across the rounds (only
	// with 2 or more rounds), by mode, then in the order of Protocols.
	Rows []SecurityRow `json:"rows,omitempty"`
	// Consume is what one consumer reading the same amount over each
	// protocol cost, in the order of Protocols (none if not measured).
	Consume []ConsumeCost `json:"consume,omitempty"`
	// ConsumeNote says what the consume CPU includes.
	ConsumeNote string `json:"consume_note,omitempty"`
	// Skipped says why a protocol did not run (e.g. a bootstrap target
	// runs only the protocol it was given), protocol → reason.
	Skipped map[string]string `json:"skipped,omitempty"`
}

// SecurityCell is one mode over one protocol.
type SecurityCell struct {
	// Mode is the run's name without the protocol ("transactional@100ms").
	Mode     string `json:"mode"`
	Protocol string `json:"protocol"`
	// Round is the round the run belongs to (1-based; 0 in results
	// written before rounds existed).
	Round int `json:"round,omitempty"`
	// Run names the run in Runs ("<mode>:<plan> over <protocol>").
	Run    string `json:"run"`
	Status string `json:"status"`
	// RecordsPerSecond is the run's acknowledged throughput.
	RecordsPerSecond float64 `json:"records_per_second"`
	// AckP99Millis and EndToEndP99Millis are its produce-ack and
	// produce-to-consumer p99 latencies (-1: not recorded).
	AckP99Millis      float64 `json:"ack_p99_ms"`
	EndToEndP99Millis float64 `json:"e2e_p99_ms"`
	// ThroughputRatio and AckP99Ratio divide by the same mode's values
	// over the reference protocol (0: no reference value).
	ThroughputRatio float64 `json:"throughput_ratio"`
	AckP99Ratio     float64 `json:"ack_p99_ratio"`
}

// SecurityRow is one mode over one protocol across the rounds: the
// paired ratios of its throughput and ack p99 to the reference
// protocol's in the same round, with their median and 95% interval.
type SecurityRow struct {
	Mode     string `json:"mode"`
	Protocol string `json:"protocol"`
	// Reference marks the reference protocol's row (its values only, no
	// ratios); NoiseFloor the A/A row, the reference against itself,
	// whose intervals are the band the other rows must leave to count.
	Reference  bool `json:"reference,omitempty"`
	NoiseFloor bool `json:"noise_floor,omitempty"`
	// Runs name the row's runs, by round.
	Runs       []string  `json:"runs"`
	Throughput RatioStat `json:"throughput"`
	AckP99     RatioStat `json:"ack_p99"`
	// EndToEndP99Millis are the produce-to-consumer p99s, by round (0:
	// not measured).
	EndToEndP99Millis []float64 `json:"e2e_p99_ms"`
}

// RatioVerdict renders a row's ratio with its interval and verdict
// ("1.05 [0.98, 1.10] within noise"), "1" for the reference row.
func (r SecurityRow) RatioVerdict(stat RatioStat) string {
	if r.Reference {
		return "1"
	}
	if len(stat.Ratios) == 0 {
		return "-"
	}
	verdict := stat.Verdict
	if r.NoiseFloor {
		verdict = "noise floor"
	}
	return stat.RatioText() + " " + verdict
}

// ConsumeCost is one protocol's cost of consuming: one consumer reading
// Bytes from the start of a topic, Passes times.
type ConsumeCost struct {
	Protocol string `json:"protocol"`
	// FetchPath is how the broker sends fetched records: "sendfile"
	// (PLAINTEXT: the kernel copies file to socket) or "copy" (TLS: the
	// records are read into memory and encrypted).
	FetchPath string `json:"fetch_path"`
	Bytes     int64  `json:"bytes"`
	Passes    int    `json:"passes"`
	// CPUSecondsPerGB is the median over the passes of the process's CPU
	// time (user + system) per 10^9 bytes read; PassCPUSecondsPerGB are
	// the passes' own values.
	CPUSecondsPerGB     float64   `json:"cpu_seconds_per_gb"`
	PassCPUSecondsPerGB []float64 `json:"pass_cpu_seconds_per_gb"`
	// MegabytesPerSecond is the median pass's read rate.
	MegabytesPerSecond float64 `json:"megabytes_per_second"`
	// Ratio divides CPUSecondsPerGB by the reference protocol's (0: none).
	Ratio float64 `json:"ratio"`
	// PassRatios, with 2 or more passes, pairs each pass with the
	// reference's pass of the same turn (the passes are interleaved): the
	// ratios' median and 95% interval (nil: fewer passes).
	PassRatios *RatioStat `json:"pass_ratios,omitempty"`
	// Error says why the measurement failed ("": it did not).
	Error string `json:"error,omitempty"`
}

// ProtocolModes are the modes of s in the order they ran.
func (s *Security) ProtocolModes() []string {
	var modes []string
	seen := map[string]bool{}
	for _, cell := range s.Cells {
		if !seen[cell.Mode] {
			seen[cell.Mode] = true
			modes = append(modes, cell.Mode)
		}
	}
	return modes
}

// Cell is mode's cell over protocol (nil: none ran), of the first round
// that ran it.
func (s *Security) Cell(mode, protocol string) *SecurityCell {
	for i := range s.Cells {
		if s.Cells[i].Mode == mode && s.Cells[i].Protocol == protocol {
			return &s.Cells[i]
		}
	}
	return nil
}

// RoundCell is mode's cell over protocol in round (nil: none ran). A
// cell of results without rounds (Round 0) is round 1's.
func (s *Security) RoundCell(mode, protocol string, round int) *SecurityCell {
	for i := range s.Cells {
		cell := &s.Cells[i]
		if cell.Mode == mode && cell.Protocol == protocol && max(cell.Round, 1) == round {
			return cell
		}
	}
	return nil
}

// Title is the security tables' heading.
func (s *Security) Title() string {
	protocols := strings.Join(s.Protocols, ", ")
	if s.Mechanism != "" {
		protocols += " (SASL: " + s.Mechanism + ")"
	}
	if s.Rounds >= 2 {
		return fmt.Sprintf("security: each mode over %s at %s, %d interleaved rounds; medians over the rounds, ratios to %s of the same mode in the same round with a 95%% interval; %s is %s against itself, the noise floor",
			protocols, LoadText(s.Rate), s.Rounds, s.Reference, s.Protocols[len(s.Protocols)-1], s.Reference)
	}
	return fmt.Sprintf("security: each mode over %s at %s; ratios to %s of the same mode (one run each: no interval, read a few percent as noise; --rounds 3 or more gives intervals)",
		protocols, LoadText(s.Rate), s.Reference)
}

// Note explains the security table under it.
func (s *Security) Note() string {
	if s.Rounds >= 2 {
		return fmt.Sprintf("Every round runs each mode once over each protocol of one broker, on a fresh topic, the protocols in an order rotated per round; %s runs twice per round, and the second (A/A) is the noise floor. "+
			"A ratio is the value over the same mode's over %s in the same round; the table gives the median over the rounds with a bootstrap 95%% interval. "+
			"It is faster or slower only when the interval excludes 1 and lies wholly outside the A/A row's interval made symmetric around 1; otherwise within noise. "+
			"Over PLAINTEXT the broker sends fetched records from the file with sendfile; over TLS it must read them into memory and encrypt them.", s.Reference, s.Reference)
	}
	return "Every mode runs once over each protocol of one broker, on a fresh topic; a ratio is the value over the same mode's over the reference protocol (bold). " +
		"One run per cell has no interval: read differences of a few percent as noise (--rounds 3 or more gives intervals and an A/A noise floor). " +
		"Over PLAINTEXT the broker sends fetched records from the file with sendfile; over TLS it must read them into memory and encrypt them."
}

// WriteSecurity prints the security tables of results (none without a
// security section): per mode and protocol the throughput, p99 ack and
// end-to-end latency and their ratios to the reference protocol, then the
// consume CPU per GB of each protocol.
func WriteSecurity(w io.Writer, results *Results) error {
	s := results.Security
	if s == nil {
		return nil
	}
	fmt.Fprintf(w, "\n%s\n", s.Title())
	table := tabwriter.NewWriter(&lineTrimmer{w: w}, 0, 0, 2, ' ', 0)
	if len(s.Rows) > 0 {
		fmt.Fprintln(table, "mode\tprotocol\trecords/s\tratio [95% CI]\tack p99 ms\tratio [95% CI]\te2e p99 ms\t")
		for _, row := range s.Rows {
			fmt.Fprintf(table, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", row.Mode, row.Protocol, number(row.Throughput.Median(), 0),
				row.RatioVerdict(row.Throughput), millis(row.AckP99.Median()), row.RatioVerdict(row.AckP99), millis(positiveMedian(row.EndToEndP99Millis)))
		}
		return writeSecurityRest(w, table, s)
	}
	fmt.Fprintln(table, "mode\tprotocol\tstatus\trecords/s\tratio\tack p99 ms\tratio\te2e p99 ms\t")
	for _, mode := range s.ProtocolModes() {
		for _, protocol := range s.Protocols {
			cell := s.Cell(mode, protocol)
			if cell == nil {
				fmt.Fprintf(table, "%s\t%s\tnot run\t-\t-\t-\t-\t-\t\n", mode, protocol)
				continue
			}
			fmt.Fprintf(table, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", mode, protocol, cell.Status, number(cell.RecordsPerSecond, 0),
				RatioNumber(cell.ThroughputRatio), millis(cell.AckP99Millis), RatioNumber(cell.AckP99Ratio), millis(cell.EndToEndP99Millis))
		}
	}
	return writeSecurityRest(w, table, s)
}

// writeSecurityRest flushes the mode table and prints what did not run
// and the consume cost table.
func writeSecurityRest(w io.Writer, table *tabwriter.Writer, s *Security) error {
	if err := table.Flush(); err != nil {
		return fmt.Errorf("write security: %w", err)
	}
	for _, protocol := range s.Protocols {
		if reason, ok := s.Skipped[protocol]; ok {
			fmt.Fprintf(w, "  %s not run: %s\n", protocol, reason)
		}
	}
	if len(s.Consume) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nconsume CPU per GB, one consumer reading %s from the start, median of %d passes (%s)\n",
		byteText(s.Consume[0].Bytes), s.Consume[0].Passes, s.ConsumeNote)
	table = tabwriter.NewWriter(&lineTrimmer{w: w}, 0, 0, 2, ' ', 0)
	fmt.Fprintln(table, "protocol\tfetch path\tCPU s/GB\tratio\tpaired by pass [95% CI]\tMB/s\t")
	for _, cost := range s.Consume {
		if cost.Error != "" {
			fmt.Fprintf(table, "%s\t%s\terror: %s\t\t\t\t\n", cost.Protocol, cost.FetchPath, cost.Error)
			continue
		}
		fmt.Fprintf(table, "%s\t%s\t%s\t%s\t%s\t%s\t\n", cost.Protocol, orDash(cost.FetchPath), number(cost.CPUSecondsPerGB, 3),
			RatioNumber(cost.Ratio), cost.PassRatioText(), number(cost.MegabytesPerSecond, 0))
	}
	return table.Flush()
}

// RatioNumber renders a ratio to the reference: "1" for the reference
// itself, "1.23", "-" when there is none.
func RatioNumber(value float64) string {
	if value <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.3g", value)
}

// byteText renders a byte count in MiB or GiB.
func byteText(bytes int64) string {
	if bytes >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", float64(bytes)/(1<<30))
	}
	return fmt.Sprintf("%.0f MiB", float64(bytes)/(1<<20))
}

// PassRatioText renders the pass-paired ratio with its interval ("-":
// not measured).
func (c ConsumeCost) PassRatioText() string {
	if c.PassRatios == nil {
		return "-"
	}
	return c.PassRatios.RatioText()
}
