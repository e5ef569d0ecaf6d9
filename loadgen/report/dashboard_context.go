package report

import (
	"fmt"
	"sort"
	"strings"
)

// fileContext is what a results file says about where it was measured,
// for the dashboard header: the machine, whether client and broker shared
// it, the broker's and the client's settings.
type fileContext struct {
	Machine string
	Sharing string
	// SharedWarning is set when client and broker ran on the same
	// machine: the page shows it as a warning.
	SharedWarning string
	Broker        string
	Client        string
}

// contextOf describes results' measurement context; fields a file does
// not have (written before they were added) say "not recorded".
func contextOf(results *Results, workload []keyValue) fileContext {
	machine := results.Machine
	text := fmt.Sprintf("%s: %s/%s, %d CPUs", machine.Hostname, machine.GOOS, machine.GOARCH, machine.NumCPU)
	if machine.GOMAXPROCS > 0 {
		text += fmt.Sprintf(", GOMAXPROCS %d", machine.GOMAXPROCS)
	}
	text += ", " + orNotRecorded(machine.CPUModel, "CPU model") + ", kernel " + orNotRecorded(machine.Kernel, "") + ", " + machine.GoVersion
	context := fileContext{Machine: text, Sharing: "not recorded", Broker: "not recorded", Client: clientContext(workload)}
	target := results.Target
	switch {
	case target.SharesMachine != nil && *target.SharesMachine:
		context.Sharing = "shared: " + target.Sharing
		context.SharedWarning = fmt.Sprintf("%s: client and broker ran on the same machine (%s). They compete for its %d CPUs, "+
			"so throughput, latency and the ratios between modes include that contention; differences of a few percent are not "+
			"evidence of a real difference.", results.Machine.Hostname, target.Kind, results.Machine.NumCPU)
	case target.Sharing != "":
		context.Sharing = target.Sharing
	}
	if len(target.BrokerSettings) > 0 {
		names := make([]string, 0, len(target.BrokerSettings))
		for name := range target.BrokerSettings {
			names = append(names, name)
		}
		sort.Strings(names)
		parts := make([]string, len(names))
		for i, name := range names {
			parts[i] = name + "=" + target.BrokerSettings[name]
		}
		context.Broker = strings.Join(parts, ", ")
	}
	return context
}

// clientContext summarizes the load's client side from the workload: the
// client library, producers, rate, record size and partitions (the
// per-run client settings are in the settings table).
func clientContext(workload []keyValue) string {
	values := map[string]string{}
	for _, kv := range workload {
		values[kv.Key] = kv.Value
	}
	rate := values["rate"] + " records/s (latency from the scheduled send time)"
	if values["rate"] == "0" || values["rate"] == "" {
		rate = "unpaced: as fast as acknowledged (latency from the record's creation)"
	}
	return fmt.Sprintf("franz-go kgo; %s producers, rate %s, %s-byte records, %s partitions; per-run settings below",
		orDash(values["producers"]), rate, orDash(values["record_size"]), orDash(values["partitions"]))
}

func orNotRecorded(value, what string) string {
	if value == "" {
		return strings.TrimSpace(what + " not recorded")
	}
	return value
}

func orDash(value string) string {
	if value == "" {
		return "-"
	}
	return value
}

// sharedWarning is one shared-machine warning of the page and the files
// it is about.
type sharedWarning struct {
	Text string
	// Files are the letters of the files, "A, C"; empty with one file.
	Files string
}

// sharedWarnings lists the files' shared-machine warnings, each distinct
// text once (files measured the same way on the same machine say the same
// thing), in file order.
func sharedWarnings(files []*fileView) []sharedWarning {
	var warnings []sharedWarning
	letters := map[string][]string{}
	for _, file := range files {
		text := file.Context.SharedWarning
		if text == "" {
			continue
		}
		if _, seen := letters[text]; !seen {
			warnings = append(warnings, sharedWarning{Text: text})
		}
		letters[text] = append(letters[text], file.Letter)
	}
	for i := range warnings {
		if len(files) > 1 {
			warnings[i].Files = strings.Join(letters[warnings[i].Text], ", ")
		}
	}
	return warnings
}
