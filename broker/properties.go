package broker

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// This file reads broker settings: key=value entries (--config) and
// server.properties files, checked against the settings table
// (brokerSettings). A key that is not a broker setting is one line naming it,
// where it was given and the nearest known key.

// ParseProperties parses key=value broker settings (e.g. from repeated
// --config flags) and validates each against the settings table. Later
// duplicates win. Unknown keys are an error (an *UnknownSettingError).
func ParseProperties(kv []string) (map[string]string, error) {
	out := make(map[string]string, len(kv))
	for _, entry := range kv {
		key, value, ok := strings.Cut(entry, "=")
		if !ok {
			return nil, fmt.Errorf("broker setting %q: want key=value", entry)
		}
		if err := addProperty(out, strings.TrimSpace(key), strings.TrimSpace(value)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Property is one key=value entry of a server.properties file, with the
// number of the line it starts on.
type Property struct {
	Key, Value string
	Line       int
}

// ReadPropertiesFile reads the entries of a file in server.properties
// format (Java's properties syntax, as Kafka reads it): key=value,
// key:value or key value lines; blank lines and lines starting with # or !
// ignored; a line ending in an odd number of backslashes continues on the
// next. The keys are not checked: LoadPropertiesFile does that, and the
// exactly command maps Kafka's KRaft keys (node.id, process.roles, ...)
// before it does.
func ReadPropertiesFile(path string) ([]Property, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load broker settings: %w", err)
	}
	defer f.Close()
	var out []Property
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 64*1024), 4*1024*1024)
	var pending strings.Builder
	start := 0
	for lineNumber := 1; scanner.Scan(); lineNumber++ {
		line := strings.TrimSpace(scanner.Text())
		if pending.Len() == 0 {
			if line == "" || line[0] == '#' || line[0] == '!' {
				continue
			}
			start = lineNumber
		}
		if continued(line) {
			pending.WriteString(line[:len(line)-1])
			continue
		}
		pending.WriteString(line)
		entry := pending.String()
		pending.Reset()
		key, value, ok := splitProperty(entry)
		if !ok {
			return nil, fmt.Errorf("%s line %d: want key=value, got %q", filepath.Base(path), start, entry)
		}
		out = append(out, Property{Key: key, Value: value, Line: start})
	}
	if err := scanner.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if pending.Len() > 0 {
		return nil, fmt.Errorf("%s line %d: the file ends inside a continued line", filepath.Base(path), start)
	}
	return out, nil
}

// splitProperty splits a properties entry as Java does: the key ends at
// the first '=', ':' or blank; blanks, then one '=' or ':', then blanks
// separate it from the value.
func splitProperty(entry string) (key, value string, ok bool) {
	cut := strings.IndexAny(entry, "=: \t")
	if cut <= 0 {
		return "", "", false
	}
	key, rest := entry[:cut], strings.TrimLeft(entry[cut:], " \t")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = rest[1:]
	}
	return key, strings.TrimSpace(rest), true
}

// continued reports whether a properties line ends in an odd number of
// backslashes (a continuation).
func continued(line string) bool {
	n := 0
	for i := len(line) - 1; i >= 0 && line[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// LoadPropertiesFile reads broker settings in server.properties format
// (ReadPropertiesFile) and validates every key as ParseProperties does;
// an error names the file and line.
func LoadPropertiesFile(path string) (map[string]string, error) {
	entries, err := ReadPropertiesFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, p := range entries {
		where := fmt.Sprintf("%s line %d", filepath.Base(path), p.Line)
		if err := addProperty(out, p.Key, p.Value); err != nil {
			var unknown *UnknownSettingError
			if errors.As(err, &unknown) {
				unknown.Where = where
				return nil, unknown
			}
			return nil, fmt.Errorf("%s: %w", where, err)
		}
	}
	return out, nil
}

// UnknownSettingError is a key that is not a broker setting. Its message
// is one line: the key, where it was given, and the closest known key if
// one is near enough to be a typo — never the list of every key.
type UnknownSettingError struct {
	// Key is the key as given.
	Key string
	// Where is where it was given, e.g. "server.properties line 7"; empty
	// when unknown.
	Where string
	// Closest is the known key nearest to Key, or "" when none is near.
	Closest string
}

func (e *UnknownSettingError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "unknown setting %q", e.Key)
	if e.Where != "" {
		b.WriteString(" in " + e.Where)
	}
	if e.Closest != "" {
		b.WriteString("; did you mean " + e.Closest + "?")
	} else {
		b.WriteString(" (the broker settings are listed in 'exactly broker --help')")
	}
	return b.String()
}

// CheckProperty validates one broker setting, key and value, against the
// settings table: an unknown key is an *UnknownSettingError, a bad value
// an error naming the key.
func CheckProperty(key, value string) error {
	return addProperty(map[string]string{}, key, value)
}
