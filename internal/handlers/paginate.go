package handlers

import (
	"encoding/base64"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// Lists are in the order of their items' keys, and a cursor names the key
// of the last item a page returned (docs/adr/0052-list-order-and-cursors.md).
// A key is a function of the item alone — never of registration or
// discovery order — so every replica holding the same items lists them
// in the same order (server/tools: tools SHOULD be listed in a
// deterministic order), and a page served by any replica resumes after
// that key: an item added or removed between pages moves no other item,
// and the cursor's own item may be gone. A stateless client's pages may
// land on any replica (server/utilities/pagination).

// listKey is an item's position in its list: its group, then its name,
// both compared bytewise. The server's own items have group "" and so
// come first; a list's keys are unique.
type listKey struct {
	group string
	name  string
}

func (k listKey) compare(o listKey) int {
	if c := strings.Compare(k.group, o.group); c != 0 {
		return c
	}
	return strings.Compare(k.name, o.name)
}

// upstreamGroup is the group of the items Federated lists; federation
// gives the upstreams' tools the same one.
const upstreamGroup = "upstream"

// listKind names the list a cursor belongs to, so that one list's cursor
// is not taken for another's.
type listKind string

const (
	kindTools     listKind = "t"
	kindPrompts   listKind = "p"
	kindResources listKind = "r"
	kindTemplates listKind = "u"
)

// Cursors are opaque to clients (server/utilities/pagination): the
// unpadded base64url of cursorVersion, the kind, ':', the group's length
// in decimal, ':', the group and the name. The version tells a cursor of
// this form from garbage and from the offset cursors of earlier versions
// (legacyCursorPrefix), which are refused.
const (
	cursorVersion      = "k1"
	legacyCursorPrefix = "o1:"
)

// cursorEncoding is strict, so that a cursor has one spelling.
var cursorEncoding = base64.RawURLEncoding.Strict()

func encodeCursor(kind listKind, k listKey) string {
	raw := make([]byte, 0, len(cursorVersion)+len(kind)+len(k.group)+len(k.name)+8)
	raw = append(raw, cursorVersion...)
	raw = append(raw, kind...)
	raw = append(raw, ':')
	raw = strconv.AppendInt(raw, int64(len(k.group)), 10)
	raw = append(raw, ':')
	raw = append(raw, k.group...)
	raw = append(raw, k.name...)
	return cursorEncoding.EncodeToString(raw)
}

// decodeCursor returns the key a cursor of kind names. legacy reports an
// offset cursor of an earlier version; ok is false for anything else that
// is not a cursor encodeCursor(kind, …) returns.
func decodeCursor(kind listKind, cursor string) (k listKey, legacy, ok bool) {
	raw, err := cursorEncoding.DecodeString(cursor)
	// The decoder skips line breaks: a cursor with any is not ours.
	if err != nil || cursorEncoding.EncodedLen(len(raw)) != len(cursor) {
		return listKey{}, false, false
	}
	s := string(raw)
	if strings.HasPrefix(s, legacyCursorPrefix) {
		return listKey{}, true, false
	}
	s, ok = strings.CutPrefix(s, cursorVersion+string(kind)+":")
	if !ok {
		return listKey{}, false, false
	}
	digits, rest, ok := strings.Cut(s, ":")
	if !ok || digits == "" || len(digits) > 1 && digits[0] == '0' || strings.Trim(digits, "0123456789") != "" {
		return listKey{}, false, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n > len(rest) {
		return listKey{}, false, false
	}
	return listKey{group: rest[:n], name: rest[n:]}, false, true
}

// badCursor is the answer to a cursor the server cannot place: -32602
// (server/utilities/pagination).
func badCursor(cursor string, legacy bool) *protocol.Error {
	if legacy {
		// An offset is a position in the order of the replica that
		// issued it, which need not be this one's: continuing from it
		// could skip or repeat items, so the client lists again.
		return protocol.Errorf(protocol.CodeInvalidParams,
			"invalid params: unknown or expired cursor %q: an offset cursor of an earlier version of this server; list again without a cursor", cursor)
	}
	return protocol.Errorf(protocol.CodeInvalidParams, "invalid params: unknown or expired cursor %q", cursor)
}

// page returns the [start,end) window of the n items, sorted by key(i)
// with no key twice, that follows cursor (nil: from the first item) — at
// most size items — and the cursor of the page after it ("" when none
// follows). With size 0 the window is empty and its next cursor
// continues where cursor did.
func page(kind listKind, n int, key func(i int) listKey, cursor *string, size int) (start, end int, next string, perr *protocol.Error) {
	var after listKey // before every item: names are never empty
	if cursor != nil {
		var legacy, ok bool
		if after, legacy, ok = decodeCursor(kind, *cursor); !ok {
			return 0, 0, "", badCursor(*cursor, legacy)
		}
		// The first item after the cursor's key, whether or not an item
		// with that key is still listed.
		start = sort.Search(n, func(i int) bool { return key(i).compare(after) > 0 })
	}
	end = start + min(max(size, 0), n-start)
	if end < n {
		if end > start {
			after = key(end - 1)
		}
		next = encodeCursor(kind, after)
	}
	return start, end, next, nil
}

// sortedByKey returns items sorted by key: items itself when it is
// already (the lists are built sorted, so this costs one pass), else a
// sorted copy. items is never modified.
func sortedByKey[T any](items []T, key func(*T) listKey) []T {
	sorted := true
	for i := 1; i < len(items) && sorted; i++ {
		sorted = key(&items[i-1]).compare(key(&items[i])) <= 0
	}
	if sorted {
		return items
	}
	out := slices.Clone(items)
	slices.SortFunc(out, func(a, b T) int { return key(&a).compare(key(&b)) })
	return out
}
