package protocol

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"
)

// Result types of the modern era: every result carries one (schema
// 2026-07-28, Result.resultType).
const (
	ResultComplete      = "complete"
	ResultInputRequired = "input_required"
)

// CacheHint is how long, and by whom, a modern result may be cached
// (server/utilities/caching): ttlMs and cacheScope.
type CacheHint struct {
	// TTL is how long the result stays fresh; 0 is stale at once.
	TTL time.Duration
	// Public allows caches shared across authorization contexts; a
	// result holding a tenant's data is private.
	Public bool
}

func (h CacheHint) scope() string {
	if h.Public {
		return "public"
	}
	return "private"
}

// DiscoverResult is the result of server/discover (server/discover).
// ttlMs, cacheScope, resultType and _meta are added by AppendModernResult.
type DiscoverResult struct {
	SupportedVersions []string           `json:"supportedVersions"`
	Capabilities      ServerCapabilities `json:"capabilities"`
	Instructions      string             `json:"instructions,omitempty"`
}

// errResultNotObject: a result is always a JSON object.
var errResultNotObject = errors.New("a result must be a JSON object")

// AppendModernResult appends result (a JSON object, valid JSON) as a
// modern result: with resultType, with ttlMs and cacheScope when hint is
// set (the cacheable methods), and with serverInfo (its JSON) added to
// _meta. Members of those names (in any case) already in result or its
// _meta are replaced; the other members of result and of its _meta are kept as
// written.
func AppendModernResult(dst, result []byte, resultType string, hint *CacheHint, serverInfo []byte) ([]byte, error) {
	if i := skipSpace(result, 0); i >= len(result) || result[i] != '{' {
		return nil, errResultNotObject
	}
	dst = append(dst, `{"resultType":`...)
	dst = AppendString(dst, resultType)
	if hint != nil {
		dst = append(dst, `,"ttlMs":`...)
		dst = strconv.AppendInt(dst, max(hint.TTL.Milliseconds(), 0), 10)
		dst = append(dst, `,"cacheScope":`...)
		dst = AppendString(dst, hint.scope())
	}
	var meta []byte
	err := eachMember(result, func(k string, v []byte) bool {
		switch {
		case k == "_meta":
			meta = v
			return true
		case strings.EqualFold(k, "resultType"), strings.EqualFold(k, "ttlMs"), strings.EqualFold(k, "cacheScope"):
			// Replaced by ours, in every spelling: a client decoding
			// names regardless of case would read a later one.
			return true
		}
		dst = append(dst, ',')
		dst = AppendString(dst, k)
		dst = append(dst, ':')
		dst = append(dst, v...)
		return true
	})
	if err != nil {
		return nil, err
	}
	dst = append(dst, `,"_meta":{`...)
	n := 0
	if len(serverInfo) > 0 {
		dst = append(dst, `"`+MetaServerInfo+`":`...)
		dst = append(dst, serverInfo...)
		n++
	}
	if len(meta) > 0 && meta[0] == '{' {
		err = eachMember(meta, func(k string, v []byte) bool {
			if len(serverInfo) > 0 && strings.EqualFold(k, MetaServerInfo) {
				// Ours, in every spelling, as resultType above: a
				// client decoding names regardless of case would
				// read the later one, an upstream's.
				return true
			}
			if n > 0 {
				dst = append(dst, ',')
			}
			dst = AppendString(dst, k)
			dst = append(dst, ':')
			dst = append(dst, v...)
			n++
			return true
		})
		if err != nil {
			return nil, err
		}
	}
	return append(dst, "}}"...), nil
}

// ServerInfoJSON is the JSON of impl, for AppendModernResult.
func ServerInfoJSON(impl Implementation) []byte {
	b, _ := json.Marshal(impl) // strings only: cannot fail
	return b
}

// AppendModernToolResponse appends the response to request id carrying
// r, a tools/call result without _meta of its own, as a modern result
// (resultType complete, serverInfo in _meta, no cache hint: a call's
// result is never cached, server/utilities/caching). It writes what
// AppendResponse and AppendModernResult would together, without
// encoding the result twice: the tools/call hot path.
func AppendModernToolResponse(dst []byte, id ID, r *CallToolResult, serverInfo []byte) ([]byte, error) {
	if len(r.Meta) > 0 {
		return nil, errors.New("AppendModernToolResponse: the result has a _meta of its own")
	}
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = appendID(dst, id)
	dst = append(dst, `,"result":{"resultType":"complete",`...)
	at := len(dst)
	dst, err := AppendToolResult(dst, r)
	if err != nil {
		return nil, err
	}
	// AppendToolResult wrote an object: its members follow ours, and
	// _meta goes before its closing brace.
	dst = append(dst[:at], dst[at+1:len(dst)-1]...)
	dst = append(dst, `,"_meta":{"`+MetaServerInfo+`":`...)
	dst = append(dst, serverInfo...)
	return append(dst, "}}}"...), nil
}
