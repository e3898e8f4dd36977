package limits

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file holds the reference implementation that Check is compared
// with: it decodes the arguments with encoding/json and walks the decoded
// tree recursively, building every path eagerly. It is deliberately simple
// and slow. Objects keep their members in document order (and duplicate
// names), which decoding into map[string]any would lose, so it builds its
// tree from json.Decoder tokens.

type refNode struct {
	kind  byte // 'o' object, 'a' array, 's' string, 'x' any other scalar
	str   string
	keys  []string // objects: member names, in order
	elems []*refNode
}

func refDecode(data []byte) (*refNode, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	n, err := refValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, fmt.Errorf("trailing data")
	}
	return n, nil
}

func refValue(dec *json.Decoder) (*refNode, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		n := &refNode{kind: 'a'}
		if t == '{' {
			n.kind = 'o'
		}
		for dec.More() {
			if n.kind == 'o' {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, kt.(string))
			}
			e, err := refValue(dec)
			if err != nil {
				return nil, err
			}
			n.elems = append(n.elems, e)
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return nil, err
		}
		return n, nil
	case string:
		return &refNode{kind: 's', str: t}, nil
	default:
		return &refNode{kind: 'x'}, nil
	}
}

// height is the number of container levels in n, counting n itself.
func (n *refNode) height() int {
	if n.kind != 'o' && n.kind != 'a' {
		return 0
	}
	h := 0
	for _, e := range n.elems {
		h = max(h, e.height())
	}
	return h + 1
}

// refViolation is what the comparison looks at: everything but the message.
type refViolation struct {
	Path   string
	Code   string
	Limit  int64
	Actual int64
}

func (v refViolation) String() string {
	return fmt.Sprintf("%q %s limit=%d actual=%d", v.Path, v.Code, v.Limit, v.Actual)
}

func strip(vs []Violation) []refViolation {
	out := make([]refViolation, 0, len(vs))
	for _, v := range vs {
		out = append(out, refViolation{v.Path, v.Code, v.Limit, v.Actual})
	}
	return out
}

// refCheck is the reference for Check. data must be valid JSON.
func refCheck(c Config, arrayLimit int, data []byte) ([]refViolation, error) {
	if int64(len(data)) > c.MaxRequestBytes {
		return []refViolation{{"", CodeRequestTooLarge, c.MaxRequestBytes, int64(len(data))}}, nil
	}
	root, err := refDecode(data)
	if err != nil {
		return nil, err
	}
	var out []refViolation
	var walk func(n *refNode, path string, depth int)
	walk = func(n *refNode, path string, depth int) {
		switch n.kind {
		case 's':
			if l := utf8.RuneCountInString(n.str); l > c.MaxStringLength {
				out = append(out, refViolation{path, CodeStringTooLong, int64(c.MaxStringLength), int64(l)})
			}
			return
		case 'x':
			return
		}
		if depth > c.MaxObjectDepth {
			out = append(out, refViolation{path, CodeMaxDepthExceeded, int64(c.MaxObjectDepth), int64(depth - 1 + n.height())})
			return
		}
		if n.kind == 'a' {
			if len(n.elems) > arrayLimit {
				out = append(out, refViolation{path, CodeArrayTooLarge, int64(arrayLimit), int64(len(n.elems))})
			}
			for i, e := range n.elems {
				walk(e, path+"/"+strconv.Itoa(i), depth+1)
			}
			return
		}
		for i, e := range n.elems {
			key := n.keys[i]
			if l := utf8.RuneCountInString(key); l > c.MaxStringLength {
				out = append(out, refViolation{path, CodeStringTooLong, int64(c.MaxStringLength), int64(l)})
			}
			walk(e, path+"/"+refEscape(key), depth+1)
		}
	}
	walk(root, "", 1)
	return out, nil
}

func refEscape(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}
