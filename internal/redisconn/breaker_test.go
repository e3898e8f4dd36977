package redisconn

import (
	"testing"
	"testing/synctest"
	"time"
)

func TestBreaker(t *testing.T) {
	o := BreakerOptions{Window: 10 * time.Second, MinOps: 20, FailureRate: 0.5, Consecutive: 5,
		OpenFor: 250 * time.Millisecond, MaxOpenFor: 2 * time.Second}
	tests := []struct {
		name string
		run  func(b *Breaker) // outcomes over (synthetic) time
		open bool
	}{
		{"one slow reply in fifty stays closed", func(b *Breaker) {
			for i := range 500 {
				b.Record(i%50 == 49)
				time.Sleep(10 * time.Millisecond)
			}
		}, false},
		{"a Redis that is down opens it on a quiet replica", func(b *Breaker) {
			for range 5 {
				b.Record(true)
				time.Sleep(time.Second)
			}
		}, true},
		{"four failures in a row then a success stay closed", func(b *Breaker) {
			for range 4 {
				b.Record(true)
			}
			b.Record(false)
			for range 4 {
				b.Record(true)
			}
		}, false},
		{"half of a busy window failing opens it", func(b *Breaker) {
			for i := range 40 {
				b.Record(i%2 == 0)
			}
		}, true},
		{"failures older than the window are forgotten", func(b *Breaker) {
			for i := range 30 {
				b.Record(i%3 != 0) // two thirds fail, never five in a row
				if i == 17 {
					time.Sleep(11 * time.Second)
				}
			}
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := NewBreaker(o, time.Now)
				tt.run(b)
				if got := !b.Allow(); got != tt.open {
					t.Fatalf("open = %v, want %v", got, tt.open)
				}
			})
		})
	}
}

// While open, each failed probe doubles the wait, up to its cap, and a
// success closes the breaker with nothing of the outage remembered.
func TestBreakerProbes(t *testing.T) {
	b := NewBreaker(BreakerOptions{Window: time.Second, MinOps: 1, FailureRate: 1, Consecutive: 1,
		OpenFor: 100 * time.Millisecond, MaxOpenFor: 500 * time.Millisecond}, time.Now)
	if !b.Record(true) {
		t.Fatal("the first failure did not open a breaker of Consecutive 1")
	}
	var waits []time.Duration
	for range 5 {
		waits = append(waits, b.NextProbe())
		b.Probed(false)
	}
	want := []time.Duration{100, 200, 400, 500, 500}
	for i := range want {
		if waits[i] != want[i]*time.Millisecond {
			t.Fatalf("waits %v, want %v ms", waits, want)
		}
	}
	if b.Record(true) {
		t.Fatal("a failure recorded while open reopened it")
	}
	b.Probed(true)
	if !b.Allow() {
		t.Fatal("a successful probe left it open")
	}
	if b.Record(false); !b.Allow() {
		t.Fatal("closed breaker refused")
	}
	if !b.Record(true) || b.NextProbe() != 100*time.Millisecond {
		t.Fatal("reopening does not start again from OpenFor")
	}
}
