package statesync

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// OverlapKind classifies an Overlap.
type OverlapKind int

const (
	// Shadowed: the earlier pattern matches every name the later one
	// matches, so under first-match-wins the later policy never applies.
	// This is always a configuration bug.
	Shadowed OverlapKind = iota + 1
	// PartialOverlap: some names match both patterns and neither pattern
	// contains the other, so declaration order silently decides those
	// names. It may be intended; it deserves a look.
	PartialOverlap
)

func (k OverlapKind) String() string {
	switch k {
	case Shadowed:
		return "shadowed"
	case PartialOverlap:
		return "partial"
	}
	return fmt.Sprintf("OverlapKind(%d)", int(k))
}

// Overlap is one warning of DetectOverlaps (seed, "OverlapWarning").
type Overlap struct {
	ShadowingIndex int         // the earlier policy, which wins
	ShadowedIndex  int         // the later policy, which loses
	Kind           OverlapKind // Shadowed or PartialOverlap
	Example        string      // a tool name both patterns match
	Message        string      // the warning, in words
}

// maxContainmentStates bounds the search of one containment check. Real
// patterns need a handful of states; adversarial ones (many "**" in both)
// could need exponentially many, and then the check gives up and the pair
// is not reported as Shadowed, at worst as PartialOverlap, which is still
// true: a warning is never wrong, only possibly less precise.
const maxContainmentStates = 4096

// DetectOverlaps finds first-match-wins ordering problems among policies
// (seed, "Policy Overlap Detection"), by static analysis of the patterns,
// never by enumerating names. For each pair of an earlier policy i and a
// later policy j it reports:
//
//   - Shadowed, when i's pattern matches every name j's does: j is dead.
//     Only the first such i is reported for j, and a dead policy is not
//     considered as the earlier one of later pairs (it never wins anything;
//     whatever it contains, the policy that shadows it contains too);
//   - PartialOverlap, when the patterns share some names but neither
//     contains the other, with one such name as Example.
//
// A specific policy before a general one that contains it ("sprints.get"
// before "sprints.*") is the seed's own idiom and is not reported. Shadowing
// by several earlier policies together, none of which alone covers the
// later one, is not detected. Invalid patterns are skipped (Validate
// reports them), and only the first MaxPolicies policies are analysed.
func DetectOverlaps(policies []Policy) []Overlap {
	if len(policies) > MaxPolicies {
		policies = policies[:MaxPolicies]
	}
	pats := make([][]string, len(policies))
	for i, p := range policies {
		if patternProblem(p.Match) == "" {
			pats[i] = strings.Split(p.Match, ".")
		}
	}
	dead := make([]bool, len(policies))
	var out []Overlap
	for j, b := range pats {
		if b == nil {
			continue
		}
		for i, a := range pats[:j] {
			if a == nil || dead[i] {
				continue
			}
			example, ok := intersection(a, b)
			if !ok {
				continue
			}
			pi, pj := policies[i].Match, policies[j].Match
			if contains(a, b, maxContainmentStates) {
				dead[j] = true
				out = append(out, Overlap{
					ShadowingIndex: i, ShadowedIndex: j, Kind: Shadowed, Example: example,
					Message: fmt.Sprintf("policy [%d] %q never applies: policy [%d] %q comes first and matches every tool it matches (first match wins); move [%d] before [%d] or remove it",
						j, pj, i, pi, j, i),
				})
				break
			}
			if contains(b, a, maxContainmentStates) {
				continue // specific before general: intended
			}
			out = append(out, Overlap{
				ShadowingIndex: i, ShadowedIndex: j, Kind: PartialOverlap, Example: example,
				Message: fmt.Sprintf("policies [%d] %q and [%d] %q both match some tools, e.g. %q; [%d] wins for them (first match wins)",
					i, pi, j, pj, example, i),
			})
		}
	}
	return out
}

// intersection reports whether some name matches both patterns (given as
// segments), and returns the shortest such name. It searches the product
// of the two patterns' automata: a state is a pair of positions, a "**"
// may be skipped on its own, and otherwise both patterns consume one common
// segment. O(N·M) states.
func intersection(a, b []string) (string, bool) {
	n, m := len(a), len(b)
	width := m + 1
	type visit struct {
		from int    // previous state, -1 for the start
		seg  string // segment consumed to get here, "" for a skipped "**"
	}
	seen := make([]bool, (n+1)*width)
	via := make([]visit, (n+1)*width)
	queue := []int{0}
	seen[0], via[0] = true, visit{from: -1}
	push := func(from, i, j int, seg string) {
		if s := i*width + j; !seen[s] {
			seen[s], via[s] = true, visit{from, seg}
			queue = append(queue, s)
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		i, j := s/width, s%width
		if i == n && j == m {
			var segs []string
			for ; s > 0; s = via[s].from {
				if via[s].seg != "" {
					segs = append(segs, via[s].seg)
				}
			}
			if len(segs) == 0 {
				// Both are all "**": they share every name, and names have
				// at least one segment.
				return "x", true
			}
			for l, r := 0, len(segs)-1; l < r; l, r = l+1, r-1 {
				segs[l], segs[r] = segs[r], segs[l]
			}
			return strings.Join(segs, "."), true
		}
		if i < n && a[i] == anySegments {
			push(s, i+1, j, "")
		}
		if j < m && b[j] == anySegments {
			push(s, i, j+1, "")
		}
		if i == n || j == m || a[i] == anySegments && b[j] == anySegments {
			continue // nothing to consume, or both would stay put
		}
		seg, ok := commonSegment(a[i], b[j])
		if !ok {
			continue
		}
		ni, nj := i+1, j+1
		if a[i] == anySegments {
			ni = i
		}
		if b[j] == anySegments {
			nj = j
		}
		push(s, ni, nj, seg)
	}
	return "", false
}

// commonSegment returns a name segment both pattern segments match.
func commonSegment(x, y string) (string, bool) {
	xLit, yLit := isLiteral(x), isLiteral(y)
	switch {
	case xLit && yLit:
		return x, x == y
	case xLit:
		return x, true
	case yLit:
		return y, true
	}
	return "x", true
}

func isLiteral(seg string) bool { return seg != anySegment && seg != anySegments }

// fresh stands for a name segment that no literal of either pattern equals
// (literals are never empty).
const fresh = ""

// contains reports whether every name b matches, a matches too. It looks
// for a counterexample, a name b matches and a does not, walking b's
// pattern while tracking the set of a's positions the name so far can
// reach (a subset construction of a's automaton). Wherever b has a
// wildcard, a fresh segment is the best counterexample candidate: a can
// match a fresh segment only with a wildcard, which would match any other
// segment as well, so if any counterexample exists, one with fresh
// segments does. Names have at least one segment, hence the nonEmpty flag.
//
// The search gives up after limit states and then answers false.
func contains(a, b []string, limit int) bool {
	n := len(a)
	type state struct {
		j        int
		nonEmpty bool
		set      []uint64 // positions of a, 0..n; bit n: a is matched
	}
	closure := func(set []uint64) []uint64 {
		for i := 0; i < n; i++ {
			if hasBit(set, i) && a[i] == anySegments {
				setBit(set, i+1)
			}
		}
		return set
	}
	words := (n + 1 + 63) / 64
	step := func(set []uint64, seg string) []uint64 {
		next := make([]uint64, words)
		for i := 0; i < n; i++ {
			if !hasBit(set, i) {
				continue
			}
			switch {
			case a[i] == anySegments:
				setBit(next, i)
			case a[i] == anySegment || a[i] == seg:
				setBit(next, i+1)
			}
		}
		return closure(next)
	}
	start := make([]uint64, words)
	setBit(start, 0)
	queue := []state{{set: closure(start)}}
	seen := make(map[string]bool)
	key := make([]byte, 0, 9+8*words)
	push := func(s state) {
		key = binary.LittleEndian.AppendUint64(key[:0], uint64(s.j))
		if s.nonEmpty {
			key = append(key, 1)
		} else {
			key = append(key, 0)
		}
		for _, w := range s.set {
			key = binary.LittleEndian.AppendUint64(key, w)
		}
		if !seen[string(key)] {
			seen[string(key)] = true
			queue = append(queue, s)
		}
	}
	for len(queue) > 0 {
		if len(seen) > limit {
			return false
		}
		s := queue[0]
		queue = queue[1:]
		if s.j == len(b) {
			if s.nonEmpty && !hasBit(s.set, n) {
				return false // a counterexample
			}
			continue
		}
		switch tok := b[s.j]; tok {
		case anySegments:
			push(state{s.j + 1, s.nonEmpty, s.set})
			push(state{s.j, true, step(s.set, fresh)})
		case anySegment:
			push(state{s.j + 1, true, step(s.set, fresh)})
		default:
			push(state{s.j + 1, true, step(s.set, tok)})
		}
	}
	return true
}

func hasBit(set []uint64, i int) bool { return set[i/64]&(1<<(i%64)) != 0 }
func setBit(set []uint64, i int)      { set[i/64] |= 1 << (i % 64) }
