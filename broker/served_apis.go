package broker

import "github.com/twmb/franz-go/pkg/kmsg"

// ServedAPI is one Kafka API the broker answers: its key, its name as
// franz-go spells it (kmsg.NameForKey), and the range of versions served.
type ServedAPI struct {
	Key      int16
	Name     string
	Min, Max int16
}

// ServedAPIs lists every API a broker of this build answers, by key, with
// the version ranges ApiVersions advertises. It reads the table the
// handlers' register calls fill from init functions (broker/*.go and
// package api's Handlers), so an API added there appears here without
// further edits.
func ServedAPIs() []ServedAPI {
	ranges := versions.Ranges()
	out := make([]ServedAPI, 0, len(ranges))
	for _, r := range ranges {
		out = append(out, ServedAPI{Key: r.Key, Name: kmsg.NameForKey(r.Key), Min: r.Min, Max: r.Max})
	}
	return out
}
