package main

import "net/http"

// securityHeaders sets the response headers every answer carries. The server serves JSON and event streams to programs, never
// pages: nothing may be sniffed as another type, framed, or leak a URL in
// a Referer. Over TLS, browsers are told to stay on HTTPS.
//
// The values are made once and shared by every answer (Header.Set would
// allocate four slices per request). net/http only reads them, and a
// handler's Set replaces a slice rather than writing into it; an Add
// appends to a full slice, so it copies.
func securityHeaders(tls bool) func(http.Handler) http.Handler {
	type header struct {
		key   string // canonical
		value []string
	}
	headers := []header{
		{"X-Content-Type-Options", []string{"nosniff"}},
		{"X-Frame-Options", []string{"DENY"}},
		{"Content-Security-Policy", []string{"default-src 'none'; frame-ancestors 'none'"}},
		{"Referrer-Policy", []string{"no-referrer"}},
	}
	if tls {
		headers = append(headers, header{"Strict-Transport-Security", []string{"max-age=31536000"}})
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h := w.Header()
			for _, hd := range headers {
				h[hd.key] = hd.value[:1:1] // full, so that an Add copies
			}
			next.ServeHTTP(w, r)
		})
	}
}
