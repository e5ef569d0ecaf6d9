// Package suggest finds the closest of a set of names to a mistyped one,
// for the "did you mean …?" of a command-line or configuration error.
package suggest

import (
	"strings"

	"github.com/agnivade/levenshtein"
)

// Closest returns the candidate nearest to name by edit distance (case
// folded), or "" when none is near enough to be a likely typo: the
// distance must be at most a third of the longer name's length, and at
// least 1 for names of 3 or more characters. A candidate that starts with
// name or contains it whole (a prefix or a shortening) counts as near.
// Ties go to the candidate listed first.
func Closest(name string, candidates []string) string {
	lowered := strings.ToLower(name)
	best, bestDistance := "", -1
	for _, candidate := range candidates {
		c := strings.ToLower(candidate)
		if c == lowered {
			return candidate
		}
		distance := levenshtein.ComputeDistance(lowered, c)
		limit := max(len(lowered), len(c)) / 3
		if len(lowered) >= 3 && (strings.HasPrefix(c, lowered) || strings.Contains(c, lowered)) {
			limit = distance
		}
		if distance > limit {
			continue
		}
		if bestDistance < 0 || distance < bestDistance {
			best, bestDistance = candidate, distance
		}
	}
	return best
}

// DidYouMean is "; did you mean X?" for the closest candidate, or "".
func DidYouMean(name string, candidates []string) string {
	if best := Closest(name, candidates); best != "" {
		return "; did you mean " + best + "?"
	}
	return ""
}
