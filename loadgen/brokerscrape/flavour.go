package brokerscrape

import (
	"strings"

	"github.com/exactly-eos/exactly/loadgen/report"
)

// flavour is one broker's metric names: how to recognise a scrape of
// them, and how to fill a run's figures from two scrapes of them. Every
// broker this package understands is one entry of [flavours].
type flavour struct {
	// name is the flavour as the results name it
	// ([report.BrokerMetrics.Flavour]).
	name string
	// prefixes are the family name prefixes that identify it.
	prefixes []string
	// fill sets out's figures from the changes between the scrapes; it
	// sets d.reset when a counter it reads went backwards.
	fill func(out *report.BrokerMetrics, d *deltas)
}

// flavours are the brokers understood, in the order they are tried: a
// scrape is of the first flavour any of whose prefixes starts a family
// name.
var flavours = []flavour{
	{name: "exactly", prefixes: []string{brokerPrefix}, fill: fillExactly},
	{name: "kafka-jmx", prefixes: []string{kafkaRequestMetrics, kafkaServerPrefix}, fill: fillKafka},
	{name: "redpanda", prefixes: []string{redpandaPrefix}, fill: fillRedpanda},
}

// detect returns the flavour of a scrape's families, nil when no
// flavour's names are among them.
func detect(families map[string]bool) *flavour {
	for i := range flavours {
		for name := range families {
			for _, prefix := range flavours[i].prefixes {
				if strings.HasPrefix(name, prefix) {
					return &flavours[i]
				}
			}
		}
	}
	return nil
}

// has reports whether the scrape after carries family.
func (d *deltas) has(family string) bool { return d.families[family] }

// count sums the changes of family's series carrying want's labels,
// whether typed counters or untyped (the JMX exporter's rules that set no
// type); found is false when no series matched. An untyped series that
// went backwards is a counter's reset: it marks d.reset.
func (d *deltas) count(family string, want map[string]string) (total float64, found bool) {
	for _, list := range [][]series{d.counters, d.untyped} {
		for _, s := range list {
			if s.matches(family, want) {
				total, found = total+s.value, true
				d.reset = d.reset || s.backwards
			}
		}
	}
	return total, found
}

// firstCount is count of the first family of candidates present.
func (d *deltas) firstCount(candidates []string, want map[string]string) (float64, bool) {
	for _, family := range candidates {
		if total, found := d.count(family, want); found {
			return total, true
		}
	}
	return 0, false
}

// level sums the values after the scrapes of family's gauges (or untyped
// series) carrying want's labels; found is false when none matched.
func (d *deltas) level(family string, want map[string]string) (total float64, found bool) {
	for _, list := range [][]series{d.gauges, d.untyped} {
		for _, s := range list {
			if s.matches(family, want) {
				total, found = total+s.after, true
			}
		}
	}
	return total, found
}

// optional is x when found, else nil.
func optional(x float64, found bool) *float64 {
	if !found {
		return nil
	}
	return pointer(tidy(x))
}
