package main

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
)

// The security headers' values are shared by every answer: a handler
// that adds to one changes its own answer only.
func TestSecurityHeadersAreNotShared(t *testing.T) {
	first := true
	h := securityHeaders(false)(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if first {
			first = false
			w.Header().Add("X-Frame-Options", "SAMEORIGIN")
			w.Header().Set("Referrer-Policy", "origin")
		}
	}))
	for i, want := range [][]string{{"DENY", "SAMEORIGIN"}, {"DENY"}} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		if got := rec.Header().Values("X-Frame-Options"); !slices.Equal(got, want) {
			t.Errorf("answer %d: X-Frame-Options %q, want %q", i, got, want)
		}
		if i == 1 && rec.Header().Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("answer %d: Referrer-Policy %q", i, rec.Header().Get("Referrer-Policy"))
		}
	}
}
