package main

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
)

// A comma-separated -url spreads the sessions over the endpoints in turn:
// each endpoint sees the handshakes, calls, GET streams and DELETEs of its
// own sessions only. The fake servers share no state and their session
// ids differ, so a request sent to the wrong endpoint fails with 404.
func TestSessionsSpreadOverURLs(t *testing.T) {
	tests := []struct {
		name        string
		endpoints   int
		sessions    int
		concurrency int
		subscribers int
		// wantSessions[j]: client sessions (subscribers included) that
		// endpoint j must see made and deleted.
		wantSessions []int
		// wantCalls[j]: whether endpoint j serves tools/call; an
		// endpoint whose sessions have no worker serves none.
		wantCalls []bool
	}{
		{name: "one endpoint", endpoints: 1, sessions: 3, concurrency: 4, wantSessions: []int{3}, wantCalls: []bool{true}},
		{name: "two endpoints", endpoints: 2, sessions: 2, concurrency: 4, wantSessions: []int{1, 1}, wantCalls: []bool{true, true}},
		{name: "three endpoints, two sessions each", endpoints: 3, sessions: 6, concurrency: 6, wantSessions: []int{2, 2, 2}, wantCalls: []bool{true, true, true}},
		{name: "uneven split", endpoints: 2, sessions: 5, concurrency: 5, wantSessions: []int{3, 2}, wantCalls: []bool{true, true}},
		{name: "sessions without workers", endpoints: 3, sessions: 3, concurrency: 2, wantSessions: []int{1, 1, 1}, wantCalls: []bool{true, true, false}},
		{name: "subscribers too", endpoints: 2, sessions: 2, concurrency: 2, subscribers: 3, wantSessions: []int{1 + 2, 1 + 1}, wantCalls: []bool{true, true}},
	}
	const requests = 120
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fakes := make([]*fakeServer, tt.endpoints)
			urls := make([]string, tt.endpoints)
			for j := range fakes {
				fakes[j] = newNotifyingFake(t)
				fakes[j].idPrefix = fmt.Sprintf("e%d-", j)
				srv := httptest.NewServer(fakes[j])
				defer srv.Close()
				urls[j] = srv.URL
			}
			args := []string{"-url", strings.Join(urls, ","), "-header", "Authorization: Bearer test-token", "-timeout", "5s",
				"-sessions", fmt.Sprint(tt.sessions), "-concurrency", fmt.Sprint(tt.concurrency),
				"-requests", fmt.Sprint(requests), "-warmup", "0", "-seed", "5"}
			if tt.subscribers > 0 {
				// Each fake notifies only its own subscribers, so the
				// notification counts are not checked here: only where
				// the subscribers' sessions and streams went.
				args = append(args, "-mix", `echo:3:{"text":"x"}`, "-mix-mutating", `store:1:{"key":"k1","value":{{seq}}}`,
					"-subscribers", fmt.Sprint(tt.subscribers), "-subscribe-uri", "store://k1", "-notify-wait", "0")
			} else {
				args = append(args, "-tool", "echo", "-args", `{"text":"x"}`)
			}
			sum := runJSON(t, args...)

			if sum.Requests != requests || sum.Errors != 0 {
				t.Fatalf("requests %d errors %d; samples %q", sum.Requests, sum.Errors, sum.ErrorSamples)
			}
			if sum.URL != strings.Join(urls, ",") {
				t.Errorf("summary url %q", sum.URL)
			}
			var calls int64
			for j, fs := range fakes {
				calls += fs.calls.Load()
				if got := fs.inits.Load(); got != int64(tt.wantSessions[j]) {
					t.Errorf("endpoint %d: %d sessions made, want %d", j, got, tt.wantSessions[j])
				}
				if got := fs.calls.Load() > 0; got != tt.wantCalls[j] {
					t.Errorf("endpoint %d: %d calls, want some: %v", j, fs.calls.Load(), tt.wantCalls[j])
				}
				if tt.subscribers > 0 {
					// Subscriber i is made at endpoint i mod N and, without
					// -subscribe-urls, streams from there.
					want := int64(0)
					for i := range tt.subscribers {
						if i%tt.endpoints == j {
							want++
						}
					}
					if got := fs.gets.Load(); got != want {
						t.Errorf("endpoint %d: %d GET streams, want %d", j, got, want)
					}
				}
				fs.mu.Lock()
				if len(fs.deleted) != tt.wantSessions[j] || len(fs.sessions) != 0 {
					t.Errorf("endpoint %d: deleted %q, still open %v", j, fs.deleted, fs.sessions)
				}
				fs.mu.Unlock()
			}
			if calls != requests {
				t.Errorf("the endpoints saw %d calls, want %d", calls, requests)
			}
		})
	}
}
