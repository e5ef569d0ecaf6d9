package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/color"
	"sort"
	"strings"
	"time"
)

// fileView is one results file as the page shows it.
type fileView struct {
	Index   int
	Letter  string
	Label   string
	Color   string // CSS colour of the file in comparison charts
	Results *Results
	// Duration is the invocation's wall time, rounded.
	Duration string
	Workload []keyValue
	// WorkloadName is the workload's name and description.
	WorkloadName string
	Settings     settingsTable
	Profiles     []string
	// Context is where the file was measured (contextOf).
	Context fileContext
	byName  map[string]*Run
}

type keyValue struct{ Key, Value string }

// settingsTable has one row per client setting and one column per run.
type settingsTable struct {
	Runs []string
	Rows []settingsRow
}

type settingsRow struct {
	Key    string
	Values []string
}

func newFileView(index int, results *Results, profiles []string) *fileView {
	file := &fileView{Index: index, Letter: string(rune('A' + index%26)), Results: results,
		Color: cssColor(fileColor(index)), Profiles: profiles, byName: map[string]*Run{}}
	for _, run := range results.Runs {
		if _, seen := file.byName[run.Name]; !seen {
			file.byName[run.Name] = run
		}
	}
	if !results.StartedAt.IsZero() && results.FinishedAt.After(results.StartedAt) {
		file.Duration = results.FinishedAt.Sub(results.StartedAt).Round(100 * time.Millisecond).String()
	}
	file.Workload = flattenJSON(results.Workload)
	file.WorkloadName = workloadName(file.Workload)
	file.Settings = clientSettingsTable(results.Runs)
	file.Context = contextOf(results, file.Workload)
	return file
}

// labelFiles names each file by letter and target kind, with the run id
// when two files share a kind; a page of one file needs no letter.
func labelFiles(files []*fileView) {
	kinds := map[string]int{}
	for _, file := range files {
		kinds[file.Results.Target.Kind]++
	}
	for _, file := range files {
		kind := file.Results.Target.Kind
		if kind == "" {
			kind = "unknown target"
		}
		file.Label = file.Letter + " " + kind
		if len(files) == 1 {
			file.Label = kind
		}
		if kinds[file.Results.Target.Kind] > 1 && file.Results.RunID != "" {
			file.Label += " " + shortID(file.Results.RunID)
		}
	}
}

func shortID(id string) string {
	if len(id) > 6 {
		return id[:6]
	}
	return id
}

func (f *fileView) run(name string) *Run { return f.byName[name] }

// baselineRate is the records/s of the file's baseline run, or 0.
func (f *fileView) baselineRate() float64 {
	for _, run := range f.Results.Runs {
		if run.Mode == BaselineModeName && charted(run) {
			return run.Throughput.RecordsPerSecond
		}
	}
	return 0
}

// faultEvents maps run names to their fault events.
func (f *fileView) faultEvents() map[string][]FaultEvent {
	events := map[string][]FaultEvent{}
	for _, run := range f.Results.Runs {
		if recorded := runFaultEvents(run); len(recorded) > 0 {
			events[run.Name] = recorded
		}
	}
	return events
}

// faultsWithoutTimes counts faults fired in runs that record no event
// times.
func (f *fileView) faultsWithoutTimes() int64 {
	var fired int64
	for _, run := range f.Results.Runs {
		if len(runFaultEvents(run)) == 0 {
			fired += run.FaultsFired
		}
	}
	return fired
}

// runNames lists run names in first-seen order over all files, and each
// name's index (its colour on every chart).
func runNames(files []*fileView) ([]string, map[string]int) {
	var names []string
	index := map[string]int{}
	for _, file := range files {
		for _, run := range file.Results.Runs {
			if _, seen := index[run.Name]; !seen {
				index[run.Name] = len(names)
				names = append(names, run.Name)
			}
		}
	}
	return names, index
}

func cssColor(c color.Color) string {
	r, g, b, _ := c.RGBA()
	return fmt.Sprintf("#%02x%02x%02x", r>>8, g>>8, b>>8)
}

// flattenJSON lists the leaves of a JSON object as dotted keys, in the
// document's order; a value that is not an object is shown whole.
func flattenJSON(raw json.RawMessage) []keyValue {
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil
	}
	decoder := json.NewDecoder(bytes.NewReader(raw))
	decoder.UseNumber()
	var pairs []keyValue
	if err := flattenValue(decoder, "", &pairs); err != nil {
		return []keyValue{{"workload", string(raw)}}
	}
	return pairs
}

// flattenValue reads one JSON value from decoder, appending its leaves
// under prefix; arrays of scalars are joined with commas.
func flattenValue(decoder *json.Decoder, prefix string, pairs *[]keyValue) error {
	token, err := decoder.Token()
	if err != nil {
		return err
	}
	delimiter, isDelimiter := token.(json.Delim)
	if !isDelimiter {
		*pairs = append(*pairs, keyValue{prefix, scalarText(token)})
		return nil
	}
	switch delimiter {
	case '{':
		for decoder.More() {
			keyToken, err := decoder.Token()
			if err != nil {
				return err
			}
			key := fmt.Sprint(keyToken)
			if prefix != "" {
				key = prefix + "." + key
			}
			if err := flattenValue(decoder, key, pairs); err != nil {
				return err
			}
		}
	case '[':
		var items []keyValue
		for decoder.More() {
			if err := flattenValue(decoder, prefix, &items); err != nil {
				return err
			}
		}
		values := make([]string, len(items))
		for index, item := range items {
			values[index] = item.Value
		}
		*pairs = append(*pairs, keyValue{prefix, strings.Join(values, ", ")})
	}
	_, err = decoder.Token() // the closing delimiter
	return err
}

func scalarText(token json.Token) string {
	if token == nil {
		return "null"
	}
	return fmt.Sprint(token)
}

// clientSettingsTable lays the runs' client settings out with one column
// per run; a setting a run does not state is "".
func clientSettingsTable(runs []*Run) settingsTable {
	keys := map[string]bool{}
	var table settingsTable
	for _, run := range runs {
		table.Runs = append(table.Runs, run.Name)
		for key := range run.ClientSettings {
			keys[key] = true
		}
	}
	sorted := make([]string, 0, len(keys))
	for key := range keys {
		sorted = append(sorted, key)
	}
	sort.Strings(sorted)
	for _, key := range sorted {
		row := settingsRow{Key: key}
		for _, run := range runs {
			row.Values = append(row.Values, run.ClientSettings[key])
		}
		table.Rows = append(table.Rows, row)
	}
	return table
}

// workloadName is "name: description" from a flattened workload.
func workloadName(workload []keyValue) string {
	var name, description string
	for _, pair := range workload {
		switch pair.Key {
		case "name":
			name = pair.Value
		case "description":
			description = pair.Value
		}
	}
	switch {
	case name == "":
		return "not recorded"
	case description == "":
		return name
	}
	return name + ": " + description
}
