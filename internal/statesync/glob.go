package statesync

import "strings"

// MaxIterations bounds the work of one MatchGlob call (seed, "Security":
// "Bounded iteration ... MAX_ITERATIONS = 1024 to prevent adversarial
// pattern DoS"). A match that would need more steps is reported as no
// match: a policy can then fall through to a later one or to the defaults,
// but a hostile pattern or name can never cost more than this.
const MaxIterations = 1024

// Segment wildcards (seed, "Glob Pattern Matching").
const (
	anySegment  = "*"  // exactly one segment
	anySegments = "**" // zero or more segments
)

// MatchGlob reports whether the dot-separated tool name matches pattern,
// where the pattern segment "*" matches exactly one name segment and "**"
// zero or more (seed, "Glob Pattern Matching"); any other segment matches
// itself only.
//
// It is false for a malformed pattern (see Config.Validate), for an empty
// name or one with an empty segment, and when the match takes more than
// MaxIterations steps. It is iterative, does not allocate, and runs in
// O(N·M) steps for N pattern and M name segments, like the seed's matcher.
func MatchGlob(pattern, name string) bool {
	if patternProblem(pattern) != "" || !wellFormedName(name) {
		return false
	}
	return matchValid(pattern, name)
}

// matchValid matches a valid pattern against a well-formed name. It is the
// classic wildcard algorithm lifted from bytes to segments: "*" plays the
// part of "?", "**" of "*". Only the latest "**" is a backtrack point: when
// a later segment fails, that "**" absorbs one more name segment and the
// match resumes after it. Earlier "**"s never need to absorb more, because
// whatever they would absorb the latest one can absorb as well, so the
// loop needs no stack and no recursion.
//
// Positions are byte offsets of segment starts; an offset past the end of
// its string (len+1) means that string is exhausted.
func matchValid(pattern, name string) bool {
	pi, ni := 0, 0
	starP, starN := -1, -1 // after the latest "**", and where it stopped absorbing
	for steps := 1; steps <= MaxIterations; steps++ {
		if ni > len(name) {
			// The name is consumed: only "**"s, which can match nothing, may
			// remain.
			for pi <= len(pattern) {
				if steps++; steps > MaxIterations {
					return false
				}
				var seg string
				seg, pi = segment(pattern, pi)
				if seg != anySegments {
					return false
				}
			}
			return true
		}
		nseg, nnext := segment(name, ni)
		if pi <= len(pattern) {
			pseg, pnext := segment(pattern, pi)
			switch {
			case pseg == anySegments && pnext > len(pattern):
				// A trailing "**" absorbs whatever remains: decide now
				// rather than spend a step per remaining segment.
				return true
			case pseg == anySegments:
				// Try absorbing nothing first; backtrack here on failure.
				starP, starN, pi = pnext, ni, pnext
				continue
			case pseg == anySegment || pseg == nseg:
				pi, ni = pnext, nnext
				continue
			}
		}
		if starP < 0 {
			return false
		}
		_, starN = segment(name, starN)
		pi, ni = starP, starN
	}
	return false
}

// segment returns the segment of s that starts at offset i, and the offset
// of the next one (len(s)+1 when it was the last).
func segment(s string, i int) (seg string, next int) {
	if j := strings.IndexByte(s[i:], '.'); j >= 0 {
		return s[i : i+j], i + j + 1
	}
	return s[i:], len(s) + 1
}

// wellFormedName reports whether name is a non-empty list of non-empty
// dot-separated segments. Names are otherwise unconstrained: a literal
// pattern segment compares bytes, so a name with unusual characters can
// still match wildcards, which is what a catch-all "**" promises.
func wellFormedName(name string) bool {
	return name != "" && name[0] != '.' && name[len(name)-1] != '.' &&
		!strings.Contains(name, "..")
}

// validLiteral reports whether seg is a literal pattern segment:
// [A-Za-z0-9_-]+, the alphabet of canonical tool names.
func validLiteral(seg string) bool {
	if seg == "" {
		return false
	}
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
