package transport

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// Defaults of the bounds on what a client sends that the server keeps or
// passes on; Options left zero get them, and the configuration takes its
// defaults from here.
const (
	// A real client's clientInfo is a name and a version, well under
	// 1 KiB; 4 KiB leaves room for a title, a description and a small
	// icon.
	DefaultMaxClientInfoBytes = 4 << 10
	// Real capabilities are a few members of empty or flag objects
	// (sampling, elicitation, roots, tasks, experimental), a few KiB at
	// most.
	DefaultMaxCapabilitiesBytes = 16 << 10
	// The deepest real capability, tasks.requests.sampling.createMessage,
	// is 5 levels down.
	DefaultMaxInitializeDepth = 10
	// A client's answer to sampling carries one model message, which may
	// be an image or audio as base64; elicitation a form's fields;
	// roots/list a list of URIs. 1 MiB holds a sizeable image, and is the
	// most a shared store hands on to the replica whose request waits
	// (Replicator.ForwardAnswer).
	DefaultMaxClientResponseBytes = 1 << 20
)

// checkInitialize refuses initialize params whose clientInfo or
// capabilities are larger or deeper than the client session may keep:
// both are held for the session's life, in memory and in a shared
// store, so their size must not be the client's to choose.
// Refused, nothing of the request is kept. Malformed params pass:
// srv.Initialize says what is wrong with them.
//
// The bound holds for what the decoder keeps, not only for the member
// spelled as the schema spells it: encoding/json matches member names
// case-insensitively and decodes a repeated one into the same value, so
// "clientInfo", "CLIENTINFO" and a second "clientInfo" all land in one
// field. Every member that folds to the name counts, their sizes added.
func (t *Transport) checkInitialize(params json.RawMessage) *protocol.Error {
	keys := [...]string{"clientInfo", "capabilities"}
	var size, depth [len(keys)]int
	if len(params) == 0 {
		return nil
	}
	err := protocol.EachMember(params, func(k string, v []byte) bool {
		for i, want := range keys {
			if strings.EqualFold(k, want) {
				size[i] += len(v)
				depth[i] = max(depth[i], jsonDepth(v))
			}
		}
		return true
	})
	if err != nil {
		return nil
	}
	limits := [len(keys)]struct {
		bytes int
		key   string
	}{
		{t.opts.MaxClientInfoBytes, "transport.maxClientInfoBytes"},
		{t.opts.MaxCapabilitiesBytes, "transport.maxCapabilitiesBytes"},
	}
	for i := range keys {
		field := "params." + keys[i]
		if lim := limits[i]; size[i] > lim.bytes {
			return boundError(field, "is "+strconv.Itoa(size[i])+" bytes", lim.bytes, lim.key, size[i])
		}
		if depth[i] > t.opts.MaxInitializeDepth {
			return boundError(field, "nests "+strconv.Itoa(depth[i])+" levels deep", t.opts.MaxInitializeDepth, "transport.maxInitializeDepth", depth[i])
		}
	}
	return nil
}

// boundError is the -32602 of a params member over one of the bounds:
// the member, the limit and the key that sets it, and the same as data.
func boundError(field, what string, limit int, key string, actual int) *protocol.Error {
	return protocol.Errorf(protocol.CodeInvalidParams, "invalid params: %s %s, over the limit of %d (%s)", field, what, limit, key).
		WithData(map[string]any{"field": field, "limit": limit, "actual": actual})
}

// jsonDepth returns how deeply the valid JSON value v nests: 0 for a
// scalar, 1 for an object or array of scalars.
func jsonDepth(v []byte) int {
	depth, deepest := 0, 0
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '"':
			for i++; i < len(v) && v[i] != '"'; i++ {
				if v[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			depth++
			deepest = max(deepest, depth)
		case '}', ']':
			depth--
		}
	}
	return deepest
}
