package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// maxSSEEvent bounds the size of one line and of one event's data so that a
// misbehaving server cannot make the load tool grow without limit.
const maxSSEEvent = 16 << 20

// errSSETooLarge is returned when a line or an event exceeds maxSSEEvent.
var errSSETooLarge = errors.New("sse: event exceeds size limit")

// sseEvent is one dispatched Server-Sent Event. Its slices alias the parser's
// buffers and are only valid until the next call to sseParser.next.
type sseEvent struct {
	Type []byte // value of the last "event:" field, empty for the default "message"
	ID   []byte // last event ID seen on the stream so far
	Data []byte // "data:" lines joined by "\n"
}

// sseParser reads a text/event-stream incrementally following the WHATWG
// event-stream interpretation rules: lines end in CRLF, LF or CR; lines that
// begin with ':' are comments; a blank line dispatches the pending event; an
// event without any data field is not dispatched; a trailing incomplete event
// at end of stream is discarded.
//
// A parser is reusable across streams through reset and keeps its buffers, so
// a worker that parses many short streams allocates almost nothing.
type sseParser struct {
	r       *bufio.Reader
	line    []byte // current line when it spans several bufio buffers
	data    []byte // data buffer, each data line followed by '\n'
	evType  []byte
	lastID  []byte
	hasData bool
	skipLF  bool // previous line ended in a lone CR: skip a following LF
	started bool // first line has been read (BOM handling)
}

func newSSEParser(r io.Reader) *sseParser {
	return &sseParser{r: bufio.NewReaderSize(r, 4096)}
}

// reset prepares the parser for a new stream, keeping its buffers.
func (p *sseParser) reset(r io.Reader) {
	p.r.Reset(r)
	p.line = p.line[:0]
	p.data = p.data[:0]
	p.evType = p.evType[:0]
	p.lastID = p.lastID[:0]
	p.hasData = false
	p.skipLF = false
	p.started = false
}

// next returns the next dispatched event. It returns io.EOF at a clean end of
// stream (any incomplete trailing event is discarded, as the spec requires).
func (p *sseParser) next() (sseEvent, error) {
	for {
		line, err := p.readLine()
		if err != nil {
			return sseEvent{}, err
		}
		if len(line) == 0 {
			if !p.hasData {
				// Nothing to dispatch; the spec resets the event type.
				p.evType = p.evType[:0]
				continue
			}
			data := p.data
			if n := len(data); n > 0 && data[n-1] == '\n' {
				data = data[:n-1]
			}
			ev := sseEvent{Type: p.evType, ID: p.lastID, Data: data}
			// Truncating keeps the backing arrays: ev stays valid until the
			// next call appends to them.
			p.data = p.data[:0]
			p.evType = p.evType[:0]
			p.hasData = false
			return ev, nil
		}
		if err := p.processField(line); err != nil {
			return sseEvent{}, err
		}
	}
}

func (p *sseParser) processField(line []byte) error {
	if line[0] == ':' {
		return nil // comment
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(name) { // no allocation: the compiler special-cases this
	case "data":
		if len(p.data)+len(value)+1 > maxSSEEvent {
			return errSSETooLarge
		}
		p.data = append(p.data, value...)
		p.data = append(p.data, '\n')
		p.hasData = true
	case "event":
		p.evType = append(p.evType[:0], value...)
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			p.lastID = append(p.lastID[:0], value...)
		}
	}
	// "retry" and unknown fields are ignored.
	return nil
}

// readLine returns the next line without its terminator. The returned slice is
// valid until the next call (it may alias the bufio buffer). It returns io.EOF
// only when no bytes remain; a final unterminated line is returned as-is and
// io.EOF follows on the next call.
func (p *sseParser) readLine() ([]byte, error) {
	if p.skipLF {
		p.skipLF = false
		b, err := p.r.ReadByte()
		if err != nil {
			return nil, p.eofOrErr(err)
		}
		if b != '\n' {
			if err := p.r.UnreadByte(); err != nil {
				return nil, fmt.Errorf("sse: unread: %w", err)
			}
		}
	}
	p.line = p.line[:0]
	for {
		if p.r.Buffered() == 0 {
			if _, err := p.r.Peek(1); err != nil {
				if len(p.line) > 0 && errors.Is(err, io.EOF) {
					// Unterminated final line: processed as a field; the
					// pending event is then discarded at EOF.
					return p.stripBOM(p.line), nil
				}
				return nil, p.eofOrErr(err)
			}
		}
		chunk, _ := p.r.Peek(p.r.Buffered())
		i := bytes.IndexAny(chunk, "\r\n")
		if i < 0 {
			if len(p.line)+len(chunk) > maxSSEEvent {
				return nil, errSSETooLarge
			}
			p.line = append(p.line, chunk...)
			if _, err := p.r.Discard(len(chunk)); err != nil {
				return nil, fmt.Errorf("sse: discard: %w", err)
			}
			continue
		}
		line := chunk[:i] // fast path: the whole line is inside the buffer
		if len(p.line) > 0 {
			if len(p.line)+i > maxSSEEvent {
				return nil, errSSETooLarge
			}
			p.line = append(p.line, line...)
			line = p.line
		}
		n := i + 1
		if chunk[i] == '\r' {
			if i+1 < len(chunk) {
				if chunk[i+1] == '\n' {
					n++
				}
			} else {
				p.skipLF = true // the LF, if any, is not buffered yet
			}
		}
		// Discard only advances the read position; the bytes that line may
		// alias stay intact until the next fill, i.e. the next readLine.
		if _, err := p.r.Discard(n); err != nil {
			return nil, fmt.Errorf("sse: discard: %w", err)
		}
		return p.stripBOM(line), nil
	}
}

// stripBOM removes a UTF-8 byte order mark at the very start of the stream.
func (p *sseParser) stripBOM(line []byte) []byte {
	if p.started {
		return line
	}
	p.started = true
	return bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
}

func (p *sseParser) eofOrErr(err error) error {
	if errors.Is(err, io.EOF) {
		return io.EOF
	}
	return fmt.Errorf("sse: read: %w", err)
}
