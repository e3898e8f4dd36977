package response

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// Metadata is the envelope's metadata member.
type Metadata struct {
	// DurationMs is how long the call took (INV-MCP-RESP-005,
	// INV-MCP-TIMEOUT-005). A negative value is encoded as 0.
	DurationMs int64
	// Cached reports that data came from a cache.
	Cached bool
	// Truncated is set by Success and Failure when they cut anything
	// (INV-MCP-RESP-004). Callers leave it false unless they cut the data
	// themselves before handing it over; it is never cleared.
	Truncated bool
}

// The wire framing of a result, as protocol.AppendToolResult writes it.
const (
	wireTextOpen   = `{"content":[{"type":"text","text":`
	wireStructOpen = `}],"structuredContent":`
	wireIsError    = `,"isError":true`
	wireClose      = `}`
)

// successHead opens a success envelope; the data follows.
const successHead = `{"success":true,"data":`

// tailRoom is more than the longest envelope tail (see frame.tail).
const tailRoom = 128

// Success returns the result of a successful call: the envelope
// {"success":true,"data":DATA,"metadata":{...}} as StructuredContent and as
// the text of the only content block. data is any value encoding/json can
// marshal, a json.RawMessage (used as is once validated; empty means
// null), or a JSONAppender (used unchecked). Lists, strings and the whole result are cut to l as the package
// documentation describes. The error is non-nil only when data cannot be
// marshalled or is invalid raw JSON.
func Success(data any, meta Metadata, l Limits) (*protocol.CallToolResult, error) {
	raw, err := marshalData(data)
	if err != nil {
		return nil, err
	}
	f := newFrame(meta, l, false, false, 0)
	env, ok := f.fit(successHead, raw, meta.Truncated)
	if !ok {
		env = f.fallback(len(raw))
	}
	return newResult(env, false), nil
}

// Failure returns the result of a failed call: isError true and the
// envelope {"success":false,"error":{code,message,context?,retryable,
// retryAfterMs?},"metadata":{...}}. A nil err, or one with an invalid code,
// is encoded as INTERNAL_ERROR (INV-MCP-RESP-002). When the result would
// exceed MaxResponseBytes the context is capped like data, then dropped,
// then the message is shortened (never below one character).
func Failure(err *Error, meta Metadata, l Limits) *protocol.CallToolResult {
	var e Error
	if err != nil {
		e = *err
	}
	code := e.Code.wireCode()
	msg := e.Message
	if msg == "" {
		msg = code.defaultMessage()
	}
	f := newFrame(meta, l, true, code.Retryable(), e.RetryAfterMs)
	suffix := f.lim.TruncationSuffix
	clipped, cut := clipRunes(msg, maxMessageRunes, suffix)
	ctx, dropped := marshalContext(e.Context)
	cut = cut || dropped || meta.Truncated

	if ctx != nil {
		if env, ok := f.fit(errorHead(code, clipped, true), ctx, cut); ok {
			return newResult(env, true)
		}
		cut = true // the context does not fit at all: leave it out
	}
	n := utf8.RuneCountInString(clipped)
	for {
		env, _, ok := f.encode(nil, errorHead(code, clipped, false), nil, 1, f.lim.MaxStringLength, cut)
		if ok || n <= 1 {
			// n == 1 always fits: minResponseBytes is chosen so that it does.
			return newResult(env, true)
		}
		n = max(1, n/2)
		clipped, _ = clipRunes(msg, n, suffix)
		cut = true
	}
}

// JSONAppender is data that writes its own JSON. Success uses
// AppendJSON instead of encoding/json and does not check its output, so
// AppendJSON must append exactly one valid JSON value (white space and
// unescaped non-ASCII allowed: the envelope normalises both). It is for hot
// read paths, where reflection and the re-validation that encoding/json
// applies to every Marshaler's output cost more than the rest of the call.
type JSONAppender interface {
	AppendJSON(dst []byte) []byte
}

// marshalData returns the JSON of data.
func marshalData(data any) ([]byte, error) {
	switch d := data.(type) {
	case nil:
		return []byte("null"), nil
	case JSONAppender:
		return d.AppendJSON(nil), nil
	case json.RawMessage:
		if len(d) == 0 {
			return []byte("null"), nil
		}
		if !json.Valid(d) {
			return nil, errors.New("response: data is not valid JSON")
		}
		return d, nil
	}
	b, err := json.Marshal(data)
	if err != nil {
		return nil, fmt.Errorf("response: marshal data: %w", err)
	}
	return b, nil
}

// marshalContext returns ctx as a JSON object with its keys in order, or nil
// when it has no member that can be encoded. dropped reports values that
// could not be encoded and were left out.
func marshalContext(ctx map[string]any) (raw []byte, dropped bool) {
	if len(ctx) == 0 {
		return nil, false
	}
	keys := make([]string, 0, len(ctx))
	for k := range ctx {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	raw = append(make([]byte, 0, 64), '{')
	for _, k := range keys {
		v, err := json.Marshal(ctx[k])
		if err != nil {
			dropped = true
			continue
		}
		if len(raw) > 1 {
			raw = append(raw, ',')
		}
		raw = protocol.AppendString(raw, k)
		raw = append(raw, ':')
		raw = append(raw, v...)
	}
	if len(raw) == 1 {
		return nil, dropped
	}
	return append(raw, '}'), dropped
}

// errorHead opens a failure envelope up to the context value (withContext)
// or up to the members after the message.
func errorHead(code Code, msg string, withContext bool) string {
	b := make([]byte, 0, 64+len(msg))
	b = append(b, `{"success":false,"error":{"code":"`...)
	b = append(b, code...) // a valid code: upper-case ASCII
	b = append(b, `","message":`...)
	b = protocol.AppendString(b, msg)
	if withContext {
		b = append(b, `,"context":`...)
	}
	return string(b)
}

// clipRunes returns s cut to at most n characters (runes; an invalid byte
// counts as one, as it decodes to U+FFFD), ending with suffix when it is
// shorter than n, and whether it cut.
func clipRunes(s string, n int, suffix string) (string, bool) {
	if utf8.RuneCountInString(s) <= n {
		return s, false
	}
	keep, sr := n, utf8.RuneCountInString(suffix)
	if sr < n {
		keep -= sr
	} else {
		suffix = ""
	}
	i := 0
	for range keep {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i] + suffix, true
}

// frame is what one Success or Failure call knows about its envelope
// besides the value inside it.
type frame struct {
	lim          Limits // normalized
	suffixRunes  int
	meta         Metadata
	isError      bool
	retryable    bool
	retryAfterMs int64
	budget       int  // the longest envelope that can fit
	tooDeep      bool // a pass found the value nested deeper than maxDepth
}

func newFrame(meta Metadata, l Limits, isError, retryable bool, retryAfterMs int64) frame {
	f := frame{lim: l.normalized(), meta: meta, isError: isError, retryable: retryable, retryAfterMs: retryAfterMs}
	f.suffixRunes = utf8.RuneCountInString(f.lim.TruncationSuffix)
	// The text block quotes the envelope (two quotes, at least), and
	// structuredContent repeats it: 2*len(env) + fixed <= MaxResponseBytes.
	fixed := len(wireTextOpen) + 2 + len(wireStructOpen) + len(wireClose)
	if isError {
		fixed += len(wireIsError)
	}
	f.budget = (f.lim.MaxResponseBytes - fixed) / 2
	return f
}

// tail closes the envelope: the error's retry members, then metadata.
func (f *frame) tail(dst []byte, truncated bool) []byte {
	if f.isError {
		dst = append(dst, `,"retryable":`...)
		dst = strconv.AppendBool(dst, f.retryable)
		if f.retryable && f.retryAfterMs > 0 {
			dst = append(dst, `,"retryAfterMs":`...)
			dst = strconv.AppendInt(dst, f.retryAfterMs, 10)
		}
		dst = append(dst, '}')
	}
	dst = append(dst, `,"metadata":{"durationMs":`...)
	dst = strconv.AppendInt(dst, max(0, f.meta.DurationMs), 10)
	dst = append(dst, `,"cached":`...)
	dst = strconv.AppendBool(dst, f.meta.Cached)
	dst = append(dst, `,"truncated":`...)
	dst = strconv.AppendBool(dst, truncated)
	return append(dst, "}}"...)
}

// encode writes into dst (reusing its storage) head, the value raw with
// arrays capped at items and strings at runes, and the tail. cut is true
// when something was cut before; the result's cut adds what this pass cut.
// ok reports that the result fits MaxResponseBytes.
func (f *frame) encode(dst []byte, head string, raw []byte, items, runes int, cut bool) (env []byte, didCut, ok bool) {
	e := emitter{
		dst:       append(dst[:0], head...),
		maxItems:  items,
		maxRunes:  runes,
		keepRunes: max(0, runes-f.suffixRunes),
		suffix:    f.lim.TruncationSuffix,
		budget:    f.budget,
	}
	if len(raw) > 0 {
		e.run(raw)
		f.tooDeep = f.tooDeep || e.tooDeep
		if e.over {
			return e.dst, true, false
		}
	}
	cut = cut || e.cut
	e.dst = f.tail(e.dst, cut)
	return e.dst, cut, len(e.dst) <= f.budget && wireSize(e.dst, f.isError) <= f.lim.MaxResponseBytes
}

// fit returns the envelope head+raw+tail cut to fit MaxResponseBytes, or
// ok false when no cut of lists and strings makes it fit.
//
// The first pass applies MaxListItems and MaxStringLength. If the result is
// too large, the caps are lowered together, each step to three quarters
// (lists down to one item, strings down to one character before the
// suffix), and a binary search over the steps finds the mildest that fits.
// A cap only changes lists and strings longer than it, so each step cuts
// the largest ones first. Every pass is bounded by the budget: it stops as
// soon as its output cannot fit.
func (f *frame) fit(head string, raw []byte, cut bool) (env []byte, ok bool) {
	l := f.lim
	size := min(len(head)+len(raw), f.budget) + tailRoom
	env, _, ok = f.encode(make([]byte, 0, size), head, raw, l.MaxListItems, l.MaxStringLength, cut)
	if ok {
		return env, true
	}
	minRunes := f.suffixRunes + 1
	last := 0
	for items, runes := l.MaxListItems, l.MaxStringLength; items > 1 || runes > minRunes; last++ {
		items, runes = lower(items, 1), lower(runes, minRunes)
	}
	if last == 0 {
		return nil, false
	}
	spare := env
	items, runes := f.capsAt(last, minRunes)
	best, _, ok := f.encode(spare, head, raw, items, runes, cut)
	if !ok {
		return nil, false
	}
	spare = nil
	// Step lo does not fit, step hi does.
	lo, hi := 0, last
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		items, runes := f.capsAt(mid, minRunes)
		var try []byte
		if try, _, ok = f.encode(spare, head, raw, items, runes, cut); ok {
			spare, best, hi = best, try, mid
		} else {
			spare, lo = try, mid
		}
	}
	return best, true
}

// capsAt returns the list and string caps of reduction step k.
func (f *frame) capsAt(k, minRunes int) (items, runes int) {
	items, runes = f.lim.MaxListItems, f.lim.MaxStringLength
	for range k {
		items, runes = lower(items, 1), lower(runes, minRunes)
	}
	return items, runes
}

// lower is one reduction step: three quarters of v, at least one less,
// never below floor.
func lower(v, floor int) int {
	n := min(v-1, v-v/4)
	return max(n, floor)
}

// fallback is the envelope when even the smallest caps do not fit: data is
// replaced by a note of the reason and the original size.
// minResponseBytes guarantees it fits.
func (f *frame) fallback(originalBytes int) []byte {
	reason := reasonSize
	if f.tooDeep {
		reason = reasonDepth
	}
	b := make([]byte, 0, 256)
	b = append(b, successHead...)
	b = append(b, `{"truncated":true,"reason":"`...)
	b = append(b, reason...)
	b = append(b, `","originalBytes":`...)
	b = strconv.AppendInt(b, int64(originalBytes), 10)
	b = append(b, '}')
	return f.tail(b, true)
}

// The reasons a fallback gives.
const (
	reasonSize  = "response exceeds maxResponseBytes"
	reasonDepth = "data nests deeper than 512 levels"
)

// resultBlock holds a result and its one content block in one allocation.
type resultBlock struct {
	r protocol.CallToolResult
	c [1]protocol.Content
}

// newResult returns the result carrying env as structuredContent and as the
// text of its content block (DESIGN.md, "Wire conventions").
func newResult(env []byte, isError bool) *protocol.CallToolResult {
	env = env[:len(env):len(env)]
	b := &resultBlock{}
	b.c[0] = protocol.TextContent(string(env))
	// The emitter writes compact, valid JSON (see emitter), so the
	// encoder need not check it again.
	b.r = protocol.CallToolResult{Content: b.c[:], StructuredContent: env, IsError: isError, StructuredCompact: true}
	return &b.r
}

// wireSize is len(protocol.AppendToolResult(nil, r)) for the result newResult
// builds from env (compact JSON, which AppendToolResult copies unchanged),
// computed without encoding it.
func wireSize(env []byte, isError bool) int {
	n := len(wireTextOpen) + quotedLen(env) + len(wireStructOpen) + len(env) + len(wireClose)
	if isError {
		n += len(wireIsError)
	}
	return n
}

// quotedLen is len(protocol.AppendString(nil, string(s))), counted by the
// same rules.
func quotedLen(s []byte) int {
	if !utf8.Valid(s) {
		return quotedLenSlow(s)
	}
	// Valid UTF-8: only ASCII specials and U+2028/U+2029 grow.
	n := 2 + len(s)
	for i, b := range s {
		switch c := quoteCost[b]; c {
		case 0:
		case lineSepLead:
			if i+2 < len(s) && s[i+1] == 0x80 && s[i+2]&^1 == 0xA8 {
				n += 3 // three bytes become \u2028
			}
		default:
			n += int(c)
		}
	}
	return n
}

// lineSepLead marks in quoteCost the first byte of U+2028 and U+2029.
const lineSepLead = 0xff

// quoteCost is what AppendString adds to each byte of valid UTF-8: one for
// \t \n \r " and \, five for other control characters (\u00XX).
const quoteCost = "" +
	"\x05\x05\x05\x05\x05\x05\x05\x05\x05\x01\x01\x05\x05\x01\x05\x05" + // 00-0f
	"\x05\x05\x05\x05\x05\x05\x05\x05\x05\x05\x05\x05\x05\x05\x05\x05" + // 10-1f
	"\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" + // 20-2f
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" + // 30-3f
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" + // 40-4f
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00" + // 50-5f
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" + // 60-6f
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" + // 70-7f
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" + // 80-8f
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" + // 90-9f
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" + // a0-af
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" + // b0-bf
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" + // c0-cf
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" + // d0-df
	"\x00\x00\xff\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" + // e0-ef
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" // f0-ff

// quotedLenSlow is quotedLen for invalid UTF-8.
func quotedLenSlow(s []byte) int {
	n := 2 + len(s)
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			n += int(quoteCost[b])
			i++
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 5 // one byte becomes \ufffd
		case r == '\u2028' || r == '\u2029':
			n += 3
		}
		i += size
	}
	return n
}
