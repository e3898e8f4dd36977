package auth

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func httptestRecorder(t *testing.T, h http.Handler) string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, WellKnownPath, nil))
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("metadata: %d %s", rec.Code, rec.Header().Get("Content-Type"))
	}
	return rec.Body.String()
}

func TestBearerToken(t *testing.T) {
	for _, tc := range []struct {
		header string
		token  string
		code   string
	}{
		{"Bearer abc.def-ghi_~+/==", "abc.def-ghi_~+/==", ""},
		{"bearer   tok", "tok", ""},
		{"BEARER tok", "tok", ""},
		{"Bearer", "", CodeInvalidRequest},
		{"Bearer ", "", CodeInvalidRequest},
		{"Bearer a b", "", CodeInvalidRequest},
		{"Bearer =abc", "", CodeInvalidRequest},
		{"Bearer ab=c", "", CodeInvalidRequest},
		{"Bearer tök", "", CodeInvalidRequest},
		{"Basic abc", "", CodeInvalidRequest},
		{"", "", CodeInvalidRequest},
		{"Bearer " + strings.Repeat("a", maxTokenBytes+1), "", CodeInvalidRequest},
	} {
		token, f := BearerToken([]string{tc.header})
		code := ""
		if f != nil {
			code = f.Code
		}
		if token != tc.token || code != tc.code {
			t.Errorf("BearerToken(%.40q) = %q, %v; want %q, %q", tc.header, token, f, tc.token, tc.code)
		}
	}
}

// FuzzBearerToken: any header value gives either a token RFC 6750 allows,
// found verbatim in the header, or a 401 invalid_request failure whose
// challenge stays a single well-formed header line.
func FuzzBearerToken(f *testing.F) {
	for _, s := range []string{"Bearer abc", "bearer  a.b.c", "Basic x", "", "Bearer \"\\\x00é", "Bearer a=="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		token, fail := BearerToken([]string{h})
		if fail != nil {
			if token != "" || fail.Status != http.StatusUnauthorized || fail.Code != CodeInvalidRequest {
				t.Fatalf("BearerToken(%q) = %q, %+v", h, token, fail)
			}
			fail.realm, fail.metadata = Realm, "https://x/.well-known/oauth-protected-resource"
			c := fail.WWWAuthenticate()
			for _, r := range c {
				if r < 0x20 || r > 0x7e {
					t.Fatalf("challenge %q has a byte a header line cannot carry", c)
				}
			}
			if strings.Count(c, `"`)%2 != 0 {
				t.Fatalf("challenge %q has unbalanced quotes", c)
			}
			return
		}
		if token == "" || !isB64Token(token) || !strings.HasSuffix(h, token) || len(token) > maxTokenBytes {
			t.Fatalf("BearerToken(%q) = %q", h, token)
		}
	})
}
