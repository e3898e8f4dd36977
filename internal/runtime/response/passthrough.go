package response

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// MetaKey is the _meta member of a passed-on result that carries this
// server's metadata of the call; a reverse-DNS prefix, as the MCP
// specification asks of _meta keys (basic/index, "_meta").
const MetaKey = "io.mcp-runtime/call"

// Passed is a tool result another server produced, to be passed on as it
// was sent (DESIGN.md, "Gateway fidelity"): content blocks and _meta as
// compact JSON, structuredContent as the server's own.
type Passed struct {
	Content           []json.RawMessage
	StructuredContent json.RawMessage
	Meta              json.RawMessage
	IsError           bool
	// Attempts is how many times the call was sent.
	Attempts int
}

// passedMeta is this server's metadata of a passed-on call, under MetaKey.
type passedMeta struct {
	DurationMs    int64 `json:"durationMs"`
	Cached        bool  `json:"cached"`
	Truncated     bool  `json:"truncated"`
	Attempts      int   `json:"attempts"`
	DroppedBlocks int   `json:"droppedBlocks,omitempty"`
	OriginalBytes int   `json:"originalBytes,omitempty"`
}

// PassThrough returns in as a tools/call result, with this server's
// metadata added to its _meta under MetaKey. It refines the size
// contract (INV-MCP-RESP-003, -004) for results this server did not
// make, whose bytes are not its to rewrite:
//
//   - a text block's text longer than l.MaxStringLength is cut with the
//     suffix, as in an envelope;
//   - binary data (a blob, image or audio data), an embedded resource's
//     text and structuredContent are never cut: cutting them would pass a
//     corrupted file or a value the tool's outputSchema does not describe
//     as a success;
//   - a result still over l.MaxResponseBytes loses whole blocks, from the
//     last, and gains a text block saying how many and why;
//     metadata.truncated and droppedBlocks say so too.
//
// A result that does not fit even without its blocks (its
// structuredContent or _meta alone is too large) is an error, which the
// caller answers as a failure.
func PassThrough(in Passed, meta Metadata, l Limits) (*protocol.CallToolResult, error) {
	l = l.normalized()
	m := passedMeta{DurationMs: max(meta.DurationMs, 0), Cached: meta.Cached, Truncated: meta.Truncated, Attempts: max(in.Attempts, 1)}
	blocks := make([]json.RawMessage, len(in.Content))
	for i, b := range in.Content {
		cut, did, err := clipTextBlock(b, l)
		if err != nil {
			return nil, fmt.Errorf("content block %d: %w", i, err)
		}
		blocks[i], m.Truncated = cut, m.Truncated || did
	}
	// The server's own _meta members are read once; every version of the
	// result below (blocks dropped or not) shares them.
	members, err := serverMeta(in.Meta)
	if err != nil {
		return nil, err
	}
	res := &protocol.CallToolResult{RawContent: blocks, StructuredContent: in.StructuredContent, IsError: in.IsError}
	size, err := passedSize(res, members, m)
	if err != nil {
		return nil, err
	}
	if size > l.MaxResponseBytes {
		m.Truncated, m.OriginalBytes = true, size
		for len(blocks) > 0 && size > l.MaxResponseBytes {
			blocks = blocks[:len(blocks)-1]
			m.DroppedBlocks++
			note, _ := json.Marshal(protocol.TextContent(fmt.Sprintf(
				"%d of the result's %d content blocks were left out: the result is %d bytes, over response.maxResponseBytes (%d)",
				m.DroppedBlocks, len(in.Content), m.OriginalBytes, l.MaxResponseBytes)))
			res.RawContent = append(blocks[:len(blocks):len(blocks)], note)
			if size, err = passedSize(res, members, m); err != nil {
				return nil, err
			}
		}
		if size > l.MaxResponseBytes {
			return nil, NewError(CodeOperationFailed,
				"the tool's result is %d bytes and does not fit response.maxResponseBytes (%d) even without its content blocks: its structuredContent or _meta alone is too large",
				m.OriginalBytes, l.MaxResponseBytes).
				WithContext("resultBytes", m.OriginalBytes).WithContext("maxResponseBytes", l.MaxResponseBytes)
		}
	}
	return res, nil
}

// passedSize sets res's _meta to the server's members and m, and returns
// the encoded size of res as it would be sent.
func passedSize(res *protocol.CallToolResult, members []byte, m passedMeta) (int, error) {
	res.Meta = appendPassedMeta(members, m)
	b, err := protocol.AppendToolResult(nil, res)
	if err != nil {
		return 0, fmt.Errorf("the tool's result cannot be encoded: %w", err)
	}
	return len(b), nil
}

// serverMeta returns the members of the result's _meta as the server sent
// them, but for MetaKey (which this server sets), as the start of a JSON
// object: "{" and each member followed by a comma. An absent or null
// _meta has no members; anything else but an object is an error.
func serverMeta(meta json.RawMessage) ([]byte, error) {
	out := []byte{'{'}
	if len(meta) == 0 || string(meta) == "null" {
		return out, nil
	}
	if !json.Valid(meta) {
		return nil, errors.New("the result's _meta is not a JSON object: invalid JSON")
	}
	err := protocol.EachMember(meta, func(key string, value []byte) bool {
		if key != MetaKey {
			out = protocol.AppendString(out, key)
			out = append(append(append(out, ':'), value...), ',')
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("the result's _meta is not a JSON object: %w", err)
	}
	return out, nil
}

// appendPassedMeta is the result's _meta: the server's members (from
// serverMeta) and MetaKey set to m, encoded as encoding/json encodes
// passedMeta (a test holds the two together).
func appendPassedMeta(members []byte, m passedMeta) json.RawMessage {
	b := make([]byte, 0, len(members)+128)
	b = append(b, members...)
	b = protocol.AppendString(b, MetaKey)
	b = append(b, `:{"durationMs":`...)
	b = strconv.AppendInt(b, m.DurationMs, 10)
	b = append(b, `,"cached":`...)
	b = strconv.AppendBool(b, m.Cached)
	b = append(b, `,"truncated":`...)
	b = strconv.AppendBool(b, m.Truncated)
	b = append(b, `,"attempts":`...)
	b = strconv.AppendInt(b, int64(m.Attempts), 10)
	if m.DroppedBlocks != 0 {
		b = append(b, `,"droppedBlocks":`...)
		b = strconv.AppendInt(b, int64(m.DroppedBlocks), 10)
	}
	if m.OriginalBytes != 0 {
		b = append(b, `,"originalBytes":`...)
		b = strconv.AppendInt(b, int64(m.OriginalBytes), 10)
	}
	return append(b, '}', '}')
}

// clipTextBlock cuts the text of a text block to l.MaxStringLength
// characters; any other block, and a text within the limit, is returned
// as it is.
func clipTextBlock(b json.RawMessage, l Limits) (json.RawMessage, bool, error) {
	// A text of more than MaxStringLength characters takes more bytes
	// than that: shorter blocks are passed without a look.
	if len(b) <= l.MaxStringLength {
		return b, false, nil
	}
	// The members as a client reads them: exactly these names, the last
	// of a repeated one (a JSON decoder that folds case would see a "Text"
	// member too, but the block is not cut for such a client's sake only).
	var m [2]json.RawMessage
	if err := protocol.LookupMembers(b, []string{"type", "text"}, m[:]); err != nil {
		return nil, false, fmt.Errorf("not a JSON object: %w", err)
	}
	var typ string
	if json.Unmarshal(m[0], &typ) != nil || typ != protocol.ContentText || m[1] == nil {
		return b, false, nil
	}
	var head struct{ Text string }
	if err := json.Unmarshal(m[1], &head.Text); err != nil {
		return nil, false, fmt.Errorf("text is not a string: %w", err)
	}
	cut, did := clipRunes(head.Text, l.MaxStringLength, l.TruncationSuffix)
	if !did {
		return b, false, nil
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(b, &members); err != nil {
		return nil, false, fmt.Errorf("not a JSON object: %w", err)
	}
	text, err := json.Marshal(cut)
	if err != nil {
		return nil, false, err
	}
	members["text"] = text
	out, err := json.Marshal(members)
	return out, true, err
}
