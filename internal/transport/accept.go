package transport

import "strings"

// accepts reads an Accept header. An absent header accepts both; a client
// sending application/json only never gets a stream; q=0 refuses a type
// (RFC 9110 §12.5.1). It runs on every POST, so it scans in place.
func accepts(h string) (jsonOK, sseOK bool) {
	if h == "" {
		return true, false
	}
	// A type refused by name stays refused whatever a wildcard says: the
	// more specific range wins (RFC 9110 §12.5.1).
	var noJSON, noSSE bool
	defer func() { jsonOK, sseOK = jsonOK && !noJSON, sseOK && !noSSE }()
	for h != "" {
		part := h
		if i := strings.IndexByte(h, ','); i >= 0 {
			part, h = h[:i], h[i+1:]
		} else {
			h = ""
		}
		mt, params, _ := strings.Cut(part, ";")
		if refused(params) {
			switch mt = strings.TrimSpace(mt); {
			case strings.EqualFold(mt, "application/json"):
				noJSON = true
			case strings.EqualFold(mt, "text/event-stream"):
				noSSE = true
			}
			continue
		}
		switch mt = strings.TrimSpace(mt); {
		case strings.EqualFold(mt, "application/json"), strings.EqualFold(mt, "application/*"):
			jsonOK = true
		case strings.EqualFold(mt, "text/event-stream"), strings.EqualFold(mt, "text/*"):
			sseOK = true
		case mt == "*/*":
			jsonOK, sseOK = true, true
		}
	}
	return jsonOK, sseOK
}

// refused reports whether media-type parameters carry q=0.
func refused(params string) bool {
	for params != "" {
		var p string
		p, params, _ = strings.Cut(params, ";")
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if ok && strings.EqualFold(k, "q") {
			v = strings.TrimRight(strings.TrimSpace(v), "0")
			return v == "0." || v == "0" || v == ""
		}
	}
	return false
}

func mediaTypeIs(h, want string) bool {
	mt, _, _ := strings.Cut(h, ";")
	return strings.EqualFold(strings.TrimSpace(mt), want)
}
