package main

import "net/http"

// securityHeaders sets the response headers every answer carries. The server serves JSON and event streams to programs, never
// pages: nothing may be sniffed as another type, framed, or leak a URL in
// a Referer. Over TLS, browsers are told to stay on HTTPS.
func securityHeaders(tls bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h := w.Header()
			h.Set("X-Content-Type-Options", "nosniff")
			h.Set("X-Frame-Options", "DENY")
			h.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
			h.Set("Referrer-Policy", "no-referrer")
			if tls {
				h.Set("Strict-Transport-Security", "max-age=31536000")
			}
			next.ServeHTTP(w, r)
		})
	}
}
