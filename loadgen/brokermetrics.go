package loadgen

import (
	"context"
	"time"

	"github.com/exactly-eos/exactly/loadgen/brokerscrape"
	"github.com/exactly-eos/exactly/loadgen/faults"
	"github.com/exactly-eos/exactly/loadgen/livemetrics"
	"github.com/exactly-eos/exactly/loadgen/report"
	"github.com/exactly-eos/exactly/loadgen/verify"
)

// scrapeTimeout bounds one scrape of the broker's /metrics.
const scrapeTimeout = 5 * time.Second

// MetricsURLer is a Target that serves its broker's Prometheus metrics
// (the embedded broker): the runner scrapes the URL before and after each
// cell unless Options.BrokerMetrics names another.
type MetricsURLer interface {
	// MetricsURL is the address of the broker's /metrics, "" when it
	// serves none.
	MetricsURL() string
}

// BrokerMetricsURL returns the address of target's /metrics: explicit
// when given, else what the target offers, else "".
func BrokerMetricsURL(explicit string, target Target) string {
	if explicit != "" {
		return explicit
	}
	if offers, ok := target.(MetricsURLer); ok {
		return offers.MetricsURL()
	}
	return ""
}

// cellScrape is one cell's scrapes of the broker's /metrics: the first
// taken before its load, the second by finish.
type cellScrape struct {
	scraper   *brokerscrape.Scraper
	skip      string // why this cell is not scraped ("": it is)
	before    *brokerscrape.Snapshot
	beforeErr error
}

// startCellScrape takes the cell's first scrape; nil when there is no
// address to scrape. A cell whose faults launched a broker of their own
// runs against that broker, not the scraped one: it is not scraped.
func startCellScrape(ctx context.Context, url string, env *faultEnv) *cellScrape {
	if url == "" {
		return nil
	}
	scrape := &cellScrape{scraper: brokerscrape.New(url, scrapeTimeout)}
	if env.broker != nil {
		scrape.skip = "not scraped: the cell ran against a broker launched for its process faults, not the one at " + url
		return scrape
	}
	scrape.before, scrape.beforeErr = scrape.scraper.Scrape(ctx)
	return scrape
}

// finish takes the second scrape and returns the cell's broker metrics
// (nil for a nil scrape). A failed scrape is a warning in them.
func (c *cellScrape) finish(ctx context.Context) *report.BrokerMetrics {
	if c == nil {
		return nil
	}
	if c.skip != "" {
		return &report.BrokerMetrics{URL: c.scraper.URL, Warnings: []string{c.skip}}
	}
	var after *brokerscrape.Snapshot
	var afterErr error
	if c.before != nil {
		after, afterErr = c.scraper.Scrape(ctx)
	}
	return brokerscrape.Compare(c.scraper.URL, c.before, after, c.beforeErr, afterErr)
}

// faultCounter counts each fired fault in the loadgen's /metrics (nil
// when they are off).
func faultCounter(live *livemetrics.Loadgen) func(faults.Event) {
	if live == nil {
		return nil
	}
	return func(event faults.Event) { live.FaultFired(string(event.Kind)) }
}

// noteChecked adds a checked cell's verdict counts to the loadgen's
// /metrics: of each verdict, the most any one check of the cell found (a
// cell is read more than once, read_committed and read_uncommitted, and
// the same lost record must not count twice). Records a read_uncommitted
// reader sees from aborted transactions are expected, not counted.
func noteChecked(live *livemetrics.Loadgen, mode string, checks []report.Check) {
	if live == nil {
		return
	}
	var worst livemetrics.CheckerCounts
	for _, check := range checks {
		counts := check.Counts
		worst.Lost = max(worst.Lost, counts.Lost)
		worst.Duplicated = max(worst.Duplicated, counts.Duplicated)
		worst.Reordered = max(worst.Reordered, counts.Reordered)
		if check.Reader != verify.ReadUncommitted.String() {
			worst.AbortedRead = max(worst.AbortedRead, counts.AbortedVisible)
		}
	}
	live.AddChecked(mode, worst)
}
