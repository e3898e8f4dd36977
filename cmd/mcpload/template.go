package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
)

// Placeholders in -args (and -mix) make each request's arguments
// different, e.g. a distinct or random key per memory_store call. They go
// inside JSON strings ("k{{seq}}") or in place of a number ({{seq}});
// prepareArgs checks the arguments as JSON with every placeholder read as
// 1:
//
//	{{seq}}     the request's JSON-RPC id: no other request of this mcpload
//	            run (warmup included) has the same one
//	{{rand:N}}  a uniformly random integer from 1 to N, as pgbench's
//	            random(1, N)
//
// Any other text, "{{" included, is sent as it is.
const (
	seqPlaceholder  = "{{seq}}"
	randPlaceholder = "{{rand:" // then N and "}}"
)

// tplPart is a run of literal bytes followed by at most one placeholder.
type tplPart struct {
	lit  []byte
	kind byte   // 0: none, 's': {{seq}}, 'r': {{rand:N}}
	n    uint64 // N of {{rand:N}}
}

// argTemplate is a request suffix with placeholders; nil when it has none.
type argTemplate []tplPart

// parseTemplate splits b at its placeholders. It returns nil when b has
// none, so that the common case stays a plain copy.
func parseTemplate(b []byte) (argTemplate, error) {
	var t argTemplate
	for {
		seq := bytes.Index(b, []byte(seqPlaceholder))
		rnd := bytes.Index(b, []byte(randPlaceholder))
		switch {
		case seq < 0 && rnd < 0:
			if t == nil {
				return nil, nil
			}
			return append(t, tplPart{lit: b}), nil
		case seq >= 0 && (rnd < 0 || seq < rnd):
			t = append(t, tplPart{lit: b[:seq], kind: 's'})
			b = b[seq+len(seqPlaceholder):]
		default:
			rest := b[rnd+len(randPlaceholder):]
			end := bytes.Index(rest, []byte("}}"))
			if end < 0 {
				return nil, fmt.Errorf("unterminated %sN}}", randPlaceholder)
			}
			n, err := strconv.ParseUint(string(rest[:end]), 10, 64)
			if err != nil || n == 0 {
				return nil, fmt.Errorf("%s%s}}: N must be a positive integer", randPlaceholder, rest[:end])
			}
			t = append(t, tplPart{lit: b[:rnd], kind: 'r', n: n})
			b = rest[end+2:]
		}
	}
}

// appendTo appends the template to dst with its placeholders filled in:
// id (the request's JSON-RPC id, decimal) for {{seq}}, a number from rng
// for {{rand:N}}.
func (t argTemplate) appendTo(dst, id []byte, rng *rand.Rand) []byte {
	for _, p := range t {
		dst = append(dst, p.lit...)
		switch p.kind {
		case 's':
			dst = append(dst, id...)
		case 'r':
			dst = strconv.AppendUint(dst, 1+rng.Uint64N(p.n), 10)
		}
	}
	return dst
}
