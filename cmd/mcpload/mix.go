package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
)

// maxWeight bounds one -mix weight, so that the sum of weights cannot
// overflow and a typo (an extra digit or two) is caught.
const maxWeight = 1_000_000

// mixEntry is one kind of request of the workload: a tools/call of tool with
// args (a template), or tools/list when tool is empty (the default workload
// without -tool or -mix).
type mixEntry struct {
	tool     string
	weight   int
	args     json.RawMessage // JSON object, possibly with {{seq}}/{{rand:N}} placeholders
	mutating bool            // its requests change -subscribe-uri (-mix-mutating)
}

// label names the entry in the summary.
func (e *mixEntry) label() string {
	if e.tool == "" {
		return "tools/list"
	}
	return e.tool
}

// mixFlag collects repeated -mix or -mix-mutating values into one list, in
// command-line order.
type mixFlag struct {
	entries  *[]mixEntry
	mutating bool
}

func (f *mixFlag) String() string {
	if f == nil || f.entries == nil {
		return ""
	}
	var parts []string
	for _, e := range *f.entries {
		if e.mutating == f.mutating {
			parts = append(parts, fmt.Sprintf("%s:%d:%s", e.tool, e.weight, e.args))
		}
	}
	return strings.Join(parts, " ")
}

func (f *mixFlag) Set(s string) error {
	e, err := parseMixEntry(s)
	if err != nil {
		return err
	}
	e.mutating = f.mutating
	*f.entries = append(*f.entries, e)
	return nil
}

// parseMixEntry parses TOOL:WEIGHT[:ARGS]. Only the first two colons
// separate fields, so ARGS (JSON, full of colons) needs no quoting; tool
// names cannot contain a colon (MCP tool names are [A-Za-z0-9_.-]).
func parseMixEntry(s string) (mixEntry, error) {
	tool, rest, ok := strings.Cut(s, ":")
	if !ok {
		return mixEntry{}, fmt.Errorf("want TOOL:WEIGHT:ARGS, e.g. 'memory_store:3:{\"key\":\"k{{rand:1000}}\",\"value\":{{seq}}}', got %q", s)
	}
	tool = strings.TrimSpace(tool)
	if tool == "" {
		return mixEntry{}, fmt.Errorf("empty tool name in %q", s)
	}
	if strings.ContainsAny(tool, " \t{}\"") {
		return mixEntry{}, fmt.Errorf("tool name %q: want TOOL:WEIGHT:ARGS with a plain tool name", tool)
	}
	weightStr, args, _ := strings.Cut(rest, ":")
	weight, err := strconv.Atoi(strings.TrimSpace(weightStr))
	if err != nil || weight < 1 || weight > maxWeight {
		return mixEntry{}, fmt.Errorf("weight %q of %s: want an integer from 1 to %d", weightStr, tool, maxWeight)
	}
	if strings.TrimSpace(args) == "" {
		args = "{}"
	}
	raw, err := prepareArgs(args)
	if err != nil {
		return mixEntry{}, fmt.Errorf("arguments of %s: %w", tool, err)
	}
	return mixEntry{tool: tool, weight: weight, args: raw}, nil
}

// prepareArgs checks an arguments template and returns it compacted when it
// is plain JSON. Placeholders may stand inside strings ("k{{seq}}") or in
// place of a number ({{seq}}): the template must be a JSON object once
// every placeholder is replaced by 1.
func prepareArgs(s string) (json.RawMessage, error) {
	b := []byte(strings.TrimSpace(s))
	tpl, err := parseTemplate(b)
	if err != nil {
		return nil, err
	}
	sample := b
	if tpl != nil {
		sample = tpl.sample()
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(sample, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("want a JSON object, got %q", s)
	}
	if tpl != nil {
		// Not valid JSON by itself with a bare placeholder: sent as given.
		return b, nil
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, b); err != nil {
		return nil, fmt.Errorf("compact %q: %w", s, err)
	}
	return compact.Bytes(), nil
}

// sample renders the template with 1 for every placeholder.
func (t argTemplate) sample() []byte {
	var dst []byte
	for _, p := range t {
		dst = append(dst, p.lit...)
		if p.kind != 0 {
			dst = append(dst, '1')
		}
	}
	return dst
}

// mixPicker chooses an entry with probability proportional to its weight.
type mixPicker struct {
	cum   []uint64 // cum[i] = weights of entries 0..i
	total uint64
}

func newMixPicker(entries []mixEntry) *mixPicker {
	p := &mixPicker{cum: make([]uint64, len(entries))}
	for i, e := range entries {
		p.total += uint64(e.weight)
		p.cum[i] = p.total
	}
	return p
}

// pick returns the index of the chosen entry. With one entry it draws no
// random number, so a single-tool run's {{rand:N}} sequence does not depend
// on whether it was given with -tool or -mix.
func (p *mixPicker) pick(rng *rand.Rand) int {
	if len(p.cum) == 1 {
		return 0
	}
	r := rng.Uint64N(p.total)
	return sort.Search(len(p.cum), func(i int) bool { return p.cum[i] > r })
}

// errMixWithTool is the usage error for -tool (or -args) combined with -mix.
var errMixWithTool = errors.New("-tool/-args and -mix/-mix-mutating are exclusive: use -mix for every tool of a mixed workload, or -tool alone for one")
