package main

// TestDocs* keep README.md and docs/**/*.md true to the binary: every
// `exactly <command> ...` line they show must name a real command and only
// flags that command has (read from its --help), and every relative link
// must reach an existing file, and for a link into a page, a heading.

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode"

	"github.com/exactly-eos/exactly/internal/suggest"
)

// repoRoot is the module root, relative to this package's directory.
const repoRoot = "../.."

// docFile is one Markdown file: its path for messages and its lines.
type docFile struct {
	path  string // relative to the repository root, slash-separated
	lines []string
}

// docFiles reads README.md and every .md file under docs/.
func docFiles(t *testing.T) []docFile {
	t.Helper()
	paths := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(repoRoot, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, err := filepath.Rel(repoRoot, p)
			if err != nil {
				return err
			}
			paths = append(paths, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("listing docs/: %v", err)
	}
	sort.Strings(paths[1:])
	var files []docFile
	for _, p := range paths {
		data, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(p)))
		if err != nil {
			t.Fatalf("reading %s: %v", p, err)
		}
		files = append(files, docFile{path: p, lines: strings.Split(string(data), "\n")})
	}
	return files
}

// snippet is a piece of text that may hold shell commands: a (continued)
// line of a code block, or an inline code span.
type snippet struct {
	line int // 1-based line where it starts
	text string
}

var fenceRE = regexp.MustCompile("^\\s*(```+|~~~+)\\s*([A-Za-z0-9_+-]*)")

// nonShellFences are code block languages that never hold commands.
var nonShellFences = map[string]bool{
	"text": true, "yaml": true, "yml": true, "json": true, "promql": true,
	"go": true, "toml": true, "ini": true, "properties": true, "csv": true,
}

// region is a run of lines outside code blocks (prose) or one code block.
type region struct {
	code  bool
	lang  string
	start int // 0-based index of its first line
	lines []string
}

// regions splits a file into prose and code blocks (fenced, or indented by
// four spaces after a blank line).
func regions(lines []string) []region {
	var out []region
	var cur *region
	flush := func() {
		if cur != nil && len(cur.lines) > 0 {
			out = append(out, *cur)
		}
		cur = nil
	}
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if m := fenceRE.FindStringSubmatch(line); m != nil {
			flush()
			fence := m[1]
			r := region{code: true, lang: strings.ToLower(m[2]), start: i + 1}
			j := i + 1
			for ; j < len(lines); j++ {
				if strings.HasPrefix(strings.TrimSpace(lines[j]), fence[:3]) {
					break
				}
				r.lines = append(r.lines, lines[j])
			}
			out = append(out, r)
			i = j
			continue
		}
		if strings.HasPrefix(line, "    ") && strings.TrimSpace(line) != "" && (i == 0 || strings.TrimSpace(lines[i-1]) == "") &&
			(cur == nil || !cur.code) && !listContinuation(lines, i) {
			flush()
			r := region{code: true, start: i}
			j := i
			for ; j < len(lines) && (strings.HasPrefix(lines[j], "    ") || strings.TrimSpace(lines[j]) == ""); j++ {
				r.lines = append(r.lines, strings.TrimPrefix(lines[j], "    "))
			}
			out = append(out, r)
			i = j - 1
			continue
		}
		if cur == nil {
			cur = &region{start: i}
		}
		cur.lines = append(cur.lines, line)
	}
	flush()
	return out
}

// listContinuation reports whether the indented line i continues a list
// item (then it is prose, not an indented code block).
func listContinuation(lines []string, i int) bool {
	for j := i - 1; j >= 0; j-- {
		s := strings.TrimSpace(lines[j])
		if s == "" {
			continue
		}
		return strings.HasPrefix(lines[j], " ") || strings.HasPrefix(s, "- ") || strings.HasPrefix(s, "* ") ||
			regexp.MustCompile(`^\d+\. `).MatchString(s)
	}
	return false
}

// inlineCodeRE matches a code span of single backticks, across line breaks.
var inlineCodeRE = regexp.MustCompile("`([^`]+)`")

// snippets returns the code lines (with backslash continuations joined) and
// the inline code spans of a file.
//
// Two ways keep a line out: in a code block whose commands carry a `$ `
// prompt, the lines without one are the program's output; and lines
// between `<!-- docs-check: off -->` and `<!-- docs-check: on -->` show
// mistakes on purpose (a table of wrong commands and their messages).
func snippets(f docFile) []snippet {
	var out []snippet
	off := make([]bool, len(f.lines)+1) // by 1-based line number
	checking := true
	for i, line := range f.lines {
		switch strings.TrimSpace(line) {
		case "<!-- docs-check: off -->":
			checking = false
		case "<!-- docs-check: on -->":
			checking = true
		}
		off[i+1] = !checking
	}
	for _, snippet := range snippetsOf(f) {
		if !off[snippet.line] {
			out = append(out, snippet)
		}
	}
	return out
}

func snippetsOf(f docFile) []snippet {
	var out []snippet
	for _, r := range regions(f.lines) {
		if r.code {
			if nonShellFences[r.lang] {
				continue
			}
			prompted := slices.ContainsFunc(r.lines, func(line string) bool { return strings.HasPrefix(line, "$ ") })
			for i := 0; i < len(r.lines); i++ {
				start := i
				text := r.lines[i]
				if prompted && !strings.HasPrefix(text, "$ ") {
					continue // output
				}
				for strings.HasSuffix(strings.TrimRight(text, " "), "\\") && i+1 < len(r.lines) {
					i++
					text = strings.TrimSuffix(strings.TrimRight(text, " "), "\\") + " " + r.lines[i]
				}
				out = append(out, snippet{line: r.start + start + 1, text: text})
			}
			continue
		}
		joined := strings.Join(r.lines, "\n")
		for _, m := range inlineCodeRE.FindAllStringSubmatchIndex(joined, -1) {
			line := r.start + strings.Count(joined[:m[0]], "\n") + 1
			out = append(out, snippet{line: line, text: strings.ReplaceAll(joined[m[2]:m[3]], "\n", " ")})
		}
	}
	return out
}

// token is a shell word, or an operator that ends a command.
type token struct {
	word string
	op   bool // |, ||, &&, ;, &, or a comment start
}

// shellWords splits text into words as sh would (quotes, backslashes), and
// operators. A `#` starting a word starts a comment: the rest is dropped.
// A Markdown table's escaped pipe `\|` counts as a pipe.
func shellWords(text string) []token {
	var out []token
	var b strings.Builder
	inWord := false
	emit := func() {
		if inWord {
			out = append(out, token{word: b.String()})
			b.Reset()
			inWord = false
		}
	}
	rs := []rune(text)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		switch {
		case c == '\'':
			inWord = true
			j := i + 1
			for j < len(rs) && rs[j] != '\'' {
				b.WriteRune(rs[j])
				j++
			}
			i = j
		case c == '"':
			inWord = true
			j := i + 1
			for j < len(rs) && rs[j] != '"' {
				if rs[j] == '\\' && j+1 < len(rs) {
					j++
				}
				b.WriteRune(rs[j])
				j++
			}
			i = j
		case c == '\\' && i+1 < len(rs) && rs[i+1] == '|':
			emit()
			out = append(out, token{word: "|", op: true})
			i++
		case c == '\\' && i+1 < len(rs):
			inWord = true
			b.WriteRune(rs[i+1])
			i++
		case c == '|' || c == ';' || c == '&':
			emit()
			op := string(c)
			if i+1 < len(rs) && (rs[i+1] == '|' || rs[i+1] == '&') {
				op += string(rs[i+1])
				i++
			}
			out = append(out, token{word: op, op: true})
		case c == '#' && !inWord:
			emit()
			out = append(out, token{word: "#", op: true})
			return out
		case unicode.IsSpace(c):
			emit()
		default:
			inWord = true
			b.WriteRune(c)
		}
	}
	emit()
	return out
}

// invocation is one `exactly <command> args...` found in the docs.
type invocation struct {
	file string
	line int
	sub  string
	args []string
}

// invocations finds the commands of a snippet that run exactly: a command
// whose program is exactly, ./exactly or a path ending in /exactly
// (optionally after `$`, `sudo`, `time` or VAR=value words), or `go run`
// of such a path (./cmd/exactly).
func invocations(file string, s snippet) []invocation {
	var out []invocation
	words := shellWords(s.text)
	for start := 0; start < len(words); {
		end := start
		for end < len(words) && !words[end].op {
			end++
		}
		cmd := make([]string, 0, end-start)
		for _, w := range words[start:end] {
			cmd = append(cmd, w.word)
		}
		if inv, ok := exactlyCommand(cmd); ok {
			inv.file, inv.line = file, s.line
			out = append(out, inv)
		}
		if end < len(words) && words[end].word == "#" {
			break
		}
		start = end + 1
	}
	return out
}

var envAssignRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

func isExactlyProgram(w string) bool {
	return w == "exactly" || strings.HasSuffix(w, "/exactly")
}

func exactlyCommand(cmd []string) (invocation, bool) {
	i := 0
	for i < len(cmd) && (cmd[i] == "$" || cmd[i] == "sudo" || cmd[i] == "time" || envAssignRE.MatchString(cmd[i])) {
		i++
	}
	if i+1 < len(cmd) && cmd[i] == "go" && cmd[i+1] == "run" {
		i += 2
		for i < len(cmd) && strings.HasPrefix(cmd[i], "-") { // go run's own flags
			i++
		}
		if i >= len(cmd) || !strings.HasSuffix(cmd[i], "/cmd/exactly") {
			return invocation{}, false
		}
	} else if i >= len(cmd) || !isExactlyProgram(cmd[i]) {
		return invocation{}, false
	}
	i++
	// "exactly loadgen: --rate -5: must be …" is the program's output
	// quoted in a session, not a command.
	if i >= len(cmd) || strings.HasSuffix(cmd[i], ":") {
		return invocation{}, false
	}
	return invocation{sub: cmd[i], args: cmd[i+1:]}, true
}

// placeholder reports whether a command word stands for any command, as in
// `exactly <command> --help`.
func placeholder(sub string) bool {
	return strings.HasPrefix(sub, "<") || strings.HasPrefix(sub, "[") || sub == "..." || sub == "…"
}

// helpFlagRE matches a flag line of flag.PrintDefaults: "  -name ..." (or
// "  --name ...", should the help format change).
var helpFlagRE = regexp.MustCompile(`^  --?([A-Za-z0-9][A-Za-z0-9_.-]*)`)

// subcommandFlags runs `exactly <sub> --help` for every command and
// returns each command's flag names.
func subcommandFlags(t *testing.T) map[string]map[string]bool {
	t.Helper()
	flags := map[string]map[string]bool{}
	for _, sc := range subcommands() {
		var stdout, stderr bytes.Buffer
		if code := run([]string{sc.name, "--help"}, &stdout, &stderr); code != 0 {
			t.Fatalf("exactly %s --help: exit %d\n%s%s", sc.name, code, stdout.String(), stderr.String())
		}
		names := map[string]bool{"h": true, "help": true}
		for _, line := range strings.Split(stdout.String()+"\n"+stderr.String(), "\n") {
			if m := helpFlagRE.FindStringSubmatch(line); m != nil {
				names[m[1]] = true
			}
		}
		flags[sc.name] = names
	}
	// The cluster's operations are commands of their own: `exactly
	// cluster drain --broker 1` is checked against drain's flags.
	for _, op := range clusterOperations {
		var stdout, stderr bytes.Buffer
		if code := run([]string{"cluster", op, "--help"}, &stdout, &stderr); code != 0 {
			t.Fatalf("exactly cluster %s --help: exit %d\n%s%s", op, code, stdout.String(), stderr.String())
		}
		names := map[string]bool{"h": true, "help": true}
		for _, line := range strings.Split(stdout.String()+"\n"+stderr.String(), "\n") {
			if m := helpFlagRE.FindStringSubmatch(line); m != nil {
				names[m[1]] = true
			}
		}
		flags["cluster "+op] = names
	}
	return flags
}

// topLevelFlags are what `exactly` itself accepts before a command.
var topLevelFlags = map[string]bool{"-h": true, "--help": true, "help": true, "--version": true, "-version": true}

// flagName returns the name of a flag word ("--rate=5" → "rate"), or ""
// when the word is not a flag (a value such as "-5", or "-").
func flagName(word string) string {
	if !strings.HasPrefix(word, "-") {
		return ""
	}
	name := strings.TrimLeft(word, "-")
	if name == "" || len(word)-len(name) > 2 {
		return ""
	}
	name, _, _ = strings.Cut(name, "=")
	if name == "" || !unicode.IsLetter(rune(name[0])) {
		return ""
	}
	return name
}

// checkInvocation returns what is wrong with one documented command line.
func checkInvocation(inv invocation, flags map[string]map[string]bool) []string {
	if placeholder(inv.sub) || topLevelFlags[inv.sub] {
		return nil
	}
	args := inv.args
	sub := inv.sub
	if sub == "cluster" && len(args) > 0 && slices.Contains(clusterOperations, args[0]) {
		sub, args = "cluster "+args[0], args[1:]
	}
	known, ok := flags[sub]
	if !ok {
		return []string{fmt.Sprintf("%s:%d: exactly %s: no such command%s", inv.file, inv.line, inv.sub,
			suggest.DidYouMean(inv.sub, subcommandNames()))}
	}
	var problems []string
	for _, a := range args {
		if a == "--" {
			break
		}
		name := flagName(a)
		if name == "" || known[name] {
			continue
		}
		names := make([]string, 0, len(known))
		for n := range known {
			names = append(names, n)
		}
		sort.Strings(names)
		hint := ""
		if c := suggest.Closest(name, names); c != "" {
			hint = fmt.Sprintf(" (did you mean --%s?)", c)
		}
		problems = append(problems, fmt.Sprintf("%s:%d: exactly %s: no flag %s%s", inv.file, inv.line, sub, a, hint))
	}
	return problems
}

func TestDocsCommands(t *testing.T) {
	t.Parallel()
	flags := subcommandFlags(t)
	checked := 0
	for _, f := range docFiles(t) {
		for _, s := range snippets(f) {
			for _, inv := range invocations(f.path, s) {
				checked++
				for _, p := range checkInvocation(inv, flags) {
					t.Error(p)
				}
			}
		}
	}
	t.Logf("checked %d exactly command lines", checked)
	if checked < 20 {
		t.Errorf("found only %d exactly command lines in the docs: is the extraction broken?", checked)
	}
}

// linkRE matches a Markdown link or image: [text](target) or
// [text](target "title").
var linkRE = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// headingSlugs returns the GitHub anchors of a file's headings.
func headingSlugs(lines []string) map[string]bool {
	slugs := map[string]bool{}
	seen := map[string]int{}
	for _, r := range regions(lines) {
		if r.code {
			continue
		}
		for _, line := range r.lines {
			trimmed := strings.TrimLeft(line, "#")
			if !strings.HasPrefix(line, "#") || len(line)-len(trimmed) > 6 || !strings.HasPrefix(trimmed, " ") {
				continue
			}
			slug := githubSlug(strings.TrimSpace(trimmed))
			if n := seen[slug]; n > 0 {
				slugs[fmt.Sprintf("%s-%d", slug, n)] = true
			} else {
				slugs[slug] = true
			}
			seen[slug]++
		}
	}
	return slugs
}

// githubSlug is GitHub's anchor for a heading: lower case, spaces to '-',
// every other character but letters, digits, '-' and '_' dropped.
func githubSlug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestDocsLinks(t *testing.T) {
	t.Parallel()
	files := docFiles(t)
	slugCache := map[string]map[string]bool{}
	slugsOf := func(path string) (map[string]bool, error) {
		if s, ok := slugCache[path]; ok {
			return s, nil
		}
		data, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(path)))
		if err != nil {
			return nil, err
		}
		s := headingSlugs(strings.Split(string(data), "\n"))
		slugCache[path] = s
		return s, nil
	}
	for _, f := range files {
		for _, r := range regions(f.lines) {
			if r.code {
				continue
			}
			for i, line := range r.lines {
				// Links inside code spans are text, not links.
				line = inlineCodeRE.ReplaceAllString(line, "")
				for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
					target := m[1]
					if strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") || strings.HasPrefix(target, "mailto:") {
						continue
					}
					where := fmt.Sprintf("%s:%d", f.path, r.start+i+1)
					path, anchor, _ := strings.Cut(target, "#")
					resolved := f.path
					if path != "" {
						resolved = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(f.path), filepath.FromSlash(path))))
						if _, err := os.Stat(filepath.Join(repoRoot, filepath.FromSlash(resolved))); err != nil {
							t.Errorf("%s: link %s: no file %s", where, target, resolved)
							continue
						}
					}
					if anchor == "" || !strings.HasSuffix(resolved, ".md") {
						continue
					}
					slugs, err := slugsOf(resolved)
					if err != nil {
						t.Errorf("%s: link %s: %v", where, target, err)
						continue
					}
					if !slugs[anchor] {
						names := make([]string, 0, len(slugs))
						for s := range slugs {
							names = append(names, s)
						}
						sort.Strings(names)
						hint := ""
						if c := suggest.Closest(anchor, names); c != "" {
							hint = fmt.Sprintf(" (did you mean #%s?)", c)
						}
						t.Errorf("%s: link %s: %s has no heading #%s%s", where, target, resolved, anchor, hint)
					}
				}
			}
		}
	}
}

// TestDocsCheckerFindsMistakes checks the checks themselves on made-up
// lines: a renamed flag, an unknown command, a command after a pipe, the
// output lines of a session and a region kept out on purpose.
func TestDocsCheckerFindsMistakes(t *testing.T) {
	t.Parallel()
	flags := map[string]map[string]bool{"loadgen": {"rate": true, "faults": true, "h": true, "help": true}}
	doc := docFile{path: "x.md", lines: strings.Split("intro `exactly loadgen --rate 5`\n\n```sh\nexactly loadgen --rat=5 \\\n  --faults 'a b' | kcat -b x -P\ngo run ./cmd/exactly lodgen --rate 1\necho x # exactly loadgen --nope\n```\n"+
		// A session: the line without a prompt is output, not a command.
		"```\n$ exactly loadgen --rate -5\nexactly loadgen: --rate -5: must be 0 or more\nexactly loadgen --nope\n```\n"+
		// Mistakes shown on purpose are kept out.
		"<!-- docs-check: off -->\n`exactly loadgen --bogus`\n<!-- docs-check: on -->\n", "\n")}
	var problems []string
	for _, s := range snippets(doc) {
		for _, inv := range invocations(doc.path, s) {
			problems = append(problems, checkInvocation(inv, flags)...)
		}
	}
	want := []string{
		"x.md:4: exactly loadgen: no flag --rat=5 (did you mean --rate?)",
		"x.md:6: exactly lodgen: no such command; did you mean loadgen?",
	}
	got := strings.Join(problems, "\n")
	if len(problems) != len(want) || !strings.Contains(got, want[0]) || !strings.Contains(got, "x.md:6: exactly lodgen: no such command") ||
		strings.Contains(got, "nope") || strings.Contains(got, "bogus") {
		t.Errorf("problems:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	if s := githubSlug("Quick start 1: what each guarantee costs on `your` cluster"); s != "quick-start-1-what-each-guarantee-costs-on-your-cluster" {
		t.Errorf("githubSlug = %q", s)
	}
}
