package main

import (
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/config"
)

// The stack closes the last pushed first, each entry once, and returns
// every error.
func TestCloseStack(t *testing.T) {
	var order []string
	s := &closeStack{closed: func(name string) { order = append(order, name) }}
	s.pushFunc("first", func() {})
	s.push("second", func(context.Context) error { return errors.New("second failed") })
	s.push("third", func(context.Context) error { return errors.New("third failed") })
	err := s.close(context.Background())
	if want := []string{"third", "second", "first"}; !slices.Equal(order, want) {
		t.Errorf("closed %v, want %v", order, want)
	}
	if err == nil || !strings.Contains(err.Error(), "second failed") || !strings.Contains(err.Error(), "third failed") {
		t.Errorf("error %v, want both failures", err)
	}
	order = nil
	if err := s.close(context.Background()); err != nil || len(order) != 0 {
		t.Errorf("second close: %v, closed %v; want nothing", err, order)
	}
}

// An app that cannot listen stops everything newApp started, the
// transport first (it calls into all the rest) and the store after all
// the rest that writes to it, the federation before the store it
// persists to, and telemetry last, so that what the others do while they
// stop is exported.
func TestListenFailureClosesInOrder(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	cfg := config.Default()
	cfg.Listen = taken.Addr().String()
	a, err := newApp(context.Background(), cfg, io.Discard, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	a.stack.closed = func(name string) { order = append(order, name) }
	if err := a.serve(context.Background()); err == nil || !strings.Contains(err.Error(), "listen on") {
		t.Fatalf("serve on a taken address: %v, want a listen error", err)
	}
	want := []string{"state sync notifier", "transport", "upstream surface", "federation", "held-call route", "memory-pressure monitor", "rate limits", "auth", "state", "telemetry"}
	if !slices.Equal(order, want) {
		t.Errorf("closed %v, want %v", order, want)
	}
}
