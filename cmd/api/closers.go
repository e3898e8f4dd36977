package main

import (
	"context"
	"errors"
)

// closeStack stops what the app started, the last pushed first. A
// component is pushed after everything it calls into, so it stops while
// they still run: the transport, which carries calls into the tools, the
// federation and the store, is pushed last and closed first; the store,
// which everything writes to, is closed last.
type closeStack struct {
	entries []closeEntry
	// closed, if set, is told each entry's name once it has closed; tests
	// read the order from it.
	closed func(name string)
}

type closeEntry struct {
	name  string
	close func(ctx context.Context) error
}

// push adds fn, named for tests, on top of the stack.
func (s *closeStack) push(name string, fn func(ctx context.Context) error) {
	s.entries = append(s.entries, closeEntry{name: name, close: fn})
}

// pushFunc is push for a closer that cannot fail.
func (s *closeStack) pushFunc(name string, fn func()) {
	s.push(name, func(context.Context) error { fn(); return nil })
}

// close runs every closer once, top first, each under ctx, and returns
// their errors joined; the stack is empty afterwards, so a second close
// does nothing. INV-MCP-XC-003: every background goroutine stops.
func (s *closeStack) close(ctx context.Context) error {
	var errs []error
	for len(s.entries) > 0 {
		e := s.entries[len(s.entries)-1]
		s.entries = s.entries[:len(s.entries)-1]
		if err := e.close(ctx); err != nil {
			errs = append(errs, err) // each component's error says what failed
		}
		if s.closed != nil {
			s.closed(e.name)
		}
	}
	return errors.Join(errs...)
}
