package main

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

type testEvent struct {
	Type, ID, Data string
}

// collectEvents parses a whole stream and returns its events and the error
// that ended it (nil for a clean io.EOF).
func collectEvents(t testing.TB, p *sseParser, r io.Reader) ([]testEvent, error) {
	t.Helper()
	p.reset(r)
	var evs []testEvent
	for range 1 << 20 {
		ev, err := p.next()
		if errors.Is(err, io.EOF) {
			return evs, nil
		}
		if err != nil {
			return evs, err
		}
		evs = append(evs, testEvent{string(ev.Type), string(ev.ID), string(ev.Data)})
	}
	t.Fatal("parser did not terminate")
	return nil, nil
}

func TestSSEParser(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []testEvent
	}{
		{"empty stream", "", nil},
		{"single event", "data: hello\n\n", []testEvent{{Data: "hello"}}},
		{"no space after colon", "data:hello\n\n", []testEvent{{Data: "hello"}}},
		{"only one leading space stripped", "data:  two\n\n", []testEvent{{Data: " two"}}},
		{"multi-line data joined with LF", "data: a\ndata: b\ndata: c\n\n", []testEvent{{Data: "a\nb\nc"}}},
		{"CRLF line endings", "event: message\r\ndata: x\r\n\r\n", []testEvent{{Type: "message", Data: "x"}}},
		{"CR line endings", "data: x\rdata: y\r\r", []testEvent{{Data: "x\ny"}}},
		{"mixed line endings", "data: a\r\ndata: b\rdata: c\n\r\n", []testEvent{{Data: "a\nb\nc"}}},
		{"comments skipped", ": keep-alive\n\n:another\ndata: x\n\n", []testEvent{{Data: "x"}}},
		{"event without data not dispatched", "event: ping\nid: 7\n\ndata: x\n\n", []testEvent{{ID: "7", Data: "x"}}},
		{"event type reset after dispatch", "event: a\ndata: 1\n\ndata: 2\n\n", []testEvent{{Type: "a", Data: "1"}, {Data: "2"}}},
		{"empty data field dispatches empty event", "id: 1\ndata:\n\n", []testEvent{{ID: "1", Data: ""}}},
		{"id persists across events", "id: 5\ndata: a\n\ndata: b\n\n", []testEvent{{ID: "5", Data: "a"}, {ID: "5", Data: "b"}}},
		{"id with NUL ignored", "id: 1\ndata: a\n\nid: x\x00y\ndata: b\n\n", []testEvent{{ID: "1", Data: "a"}, {ID: "1", Data: "b"}}},
		{"field without colon", "data\n\n", []testEvent{{Data: ""}}},
		{"unknown fields and retry ignored", "retry: 1000\nfoo: bar\ndata: x\n\n", []testEvent{{Data: "x"}}},
		{"trailing incomplete event discarded", "data: a\n\ndata: b\n", []testEvent{{Data: "a"}}},
		{"unterminated last line discarded", "data: a\n\ndata: b", []testEvent{{Data: "a"}}},
		{"BOM stripped", "\xef\xbb\xbfdata: a\n\n", []testEvent{{Data: "a"}}},
		{"BOM only at start", "data: a\n\n\xef\xbb\xbfdata: b\n\n", []testEvent{{Data: "a"}}},
		{"data with colons", "data: {\"a\":\"b:c\"}\n\n", []testEvent{{Data: `{"a":"b:c"}`}}},
		{"blank lines between events", "\n\n\ndata: a\n\n\n\ndata: b\n\n", []testEvent{{Data: "a"}, {Data: "b"}}},
		{
			"json-rpc response after notification",
			"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n" +
				"event: message\nid: 2\ndata: {\"jsonrpc\":\"2.0\",\ndata: \"id\":1,\"result\":{}}\n\n",
			[]testEvent{
				{Type: "message", Data: `{"jsonrpc":"2.0","method":"notifications/progress"}`},
				{Type: "message", ID: "2", Data: "{\"jsonrpc\":\"2.0\",\n\"id\":1,\"result\":{}}"},
			},
		},
		{
			"long line spanning buffer refills",
			"data: " + strings.Repeat("x", 10000) + "\n\n",
			[]testEvent{{Data: strings.Repeat("x", 10000)}},
		},
	}
	p := newSSEParser(emptyReader{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			readers := map[string]io.Reader{
				"whole":    strings.NewReader(tt.in),
				"one-byte": iotest.OneByteReader(strings.NewReader(tt.in)),
				"half":     iotest.HalfReader(strings.NewReader(tt.in)),
				"data-err": iotest.DataErrReader(strings.NewReader(tt.in)),
			}
			for rname, r := range readers {
				got, err := collectEvents(t, p, r)
				if err != nil {
					t.Fatalf("%s: unexpected error %v", rname, err)
				}
				if !equalEvents(got, tt.want) {
					t.Errorf("%s:\n got %q\nwant %q", rname, got, tt.want)
				}
			}
		})
	}
}

func TestSSEParserErrors(t *testing.T) {
	p := newSSEParser(emptyReader{})
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader("data: a\n\ndata: b"), iotest.ErrReader(boom))
	got, err := collectEvents(t, p, r)
	if !errors.Is(err, boom) {
		t.Fatalf("got error %v, want %v", err, boom)
	}
	if want := []testEvent{{Data: "a"}}; !equalEvents(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}

	huge := "data: " + strings.Repeat("x", maxSSEEvent+1) + "\n\n"
	if _, err := collectEvents(t, p, strings.NewReader(huge)); !errors.Is(err, errSSETooLarge) {
		t.Errorf("oversized line: got %v, want errSSETooLarge", err)
	}
	many := strings.Repeat("data: "+strings.Repeat("x", 1<<20)+"\n", 17) + "\n"
	if _, err := collectEvents(t, p, strings.NewReader(many)); !errors.Is(err, errSSETooLarge) {
		t.Errorf("oversized event: got %v, want errSSETooLarge", err)
	}
}

func equalEvents(a, b []testEvent) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// emptyReader is an empty stream for constructing parsers.
type emptyReader struct{}

func (emptyReader) Read([]byte) (int, error) { return 0, io.EOF }

// referenceSSE is a deliberately naive, whole-input implementation of the
// same rules, used to cross-check the streaming parser in the fuzz test.
func referenceSSE(in []byte) []testEvent {
	in = bytes.TrimPrefix(in, []byte("\xef\xbb\xbf"))
	var lines [][]byte
	start := 0
	for i := 0; i < len(in); i++ {
		switch in[i] {
		case '\n':
			lines = append(lines, in[start:i])
			start = i + 1
		case '\r':
			lines = append(lines, in[start:i])
			if i+1 < len(in) && in[i+1] == '\n' {
				i++
			}
			start = i + 1
		}
	}
	if start < len(in) {
		lines = append(lines, in[start:]) // processed, never dispatched
	}
	var evs []testEvent
	var data, typ, id string
	hasData := false
	for _, l := range lines {
		if len(l) == 0 {
			if hasData {
				evs = append(evs, testEvent{typ, id, strings.TrimSuffix(data, "\n")})
			}
			data, typ, hasData = "", "", false
			continue
		}
		if l[0] == ':' {
			continue
		}
		name, value, _ := strings.Cut(string(l), ":")
		value = strings.TrimPrefix(value, " ")
		switch name {
		case "data":
			data += value + "\n"
			hasData = true
		case "event":
			typ = value
		case "id":
			if !strings.Contains(value, "\x00") {
				id = value
			}
		}
	}
	return evs
}

func FuzzSSEParser(f *testing.F) {
	for _, s := range []string{
		"data: a\n\n", "data: a\r\ndata: b\r\n\r\n", ":c\n\nevent: x\ndata:\n\n",
		"id: 1\rdata: z\r\r", "\xef\xbb\xbfdata: bom\n\n", "data", "\r\n\r", "data: a\n\nda",
	} {
		f.Add([]byte(s))
	}
	p := newSSEParser(emptyReader{})
	f.Fuzz(func(t *testing.T, in []byte) {
		want := referenceSSE(in)
		for _, r := range []io.Reader{bytes.NewReader(in), iotest.OneByteReader(bytes.NewReader(in))} {
			got, err := collectEvents(t, p, r)
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !equalEvents(got, want) {
				t.Fatalf("input %q:\n got %q\nwant %q", in, got, want)
			}
		}
	})
}
