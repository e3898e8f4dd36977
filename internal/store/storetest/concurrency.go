package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// racers is how many goroutines each race starts.
const racers = 50

// race runs f(i) for i in [0, racers) at once (as near as goroutines
// allow) and returns the errors, indexed by i.
func race(f func(i int) error) []error {
	errs := make([]error, racers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			<-start
			errs[i] = f(i)
		})
	}
	close(start)
	wg.Wait()
	return errs
}

func testConcurrency(t *testing.T, h *harness) {
	t.Run("concurrent joins are all kept", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		s := newSession(t, h, tn)
		errs := race(func(i int) error {
			_, err := h.s.JoinSession(ctx(t), tn, s.ID, fmt.Sprintf("agent-%02d", i), store.RoleCollaborator, racers+1)
			return err
		})
		for i, err := range errs {
			if err != nil {
				t.Fatalf("join %d of an active session with room failed: %v", i, err)
			}
		}
		got := must(h.s.GetSession(ctx(t), tn, s.ID))(t)
		ids := participantIDs(got)
		equal(t, "participants", len(ids), racers+1)
		equal(t, "initiator first", ids[0], "lead")
		equal(t, "version", got.Version, int64(1+racers))
		want := make([]string, racers)
		for i := range want {
			want[i] = fmt.Sprintf("agent-%02d", i)
		}
		equal(t, "joined", sortedCopy(ids[1:]), want)
	})

	t.Run("concurrent joins never overfill a session", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		s := newSession(t, h, tn)
		const max = 10
		errs := race(func(i int) error {
			_, err := h.s.JoinSession(ctx(t), tn, s.ID, fmt.Sprintf("agent-%02d", i), store.RoleDelegate, max)
			return err
		})
		var joined []string
		for i, err := range errs {
			switch {
			case err == nil:
				joined = append(joined, fmt.Sprintf("agent-%02d", i))
			case !errors.Is(err, store.ErrConflict):
				t.Fatalf("join %d: got %v, want success or ErrConflict", i, err)
			}
		}
		equal(t, "successful joins", len(joined), max-1)
		got := must(h.s.GetSession(ctx(t), tn, s.ID))(t)
		equal(t, "participants", sortedCopy(participantIDs(got)[1:]), joined)
	})

	t.Run("joins racing a completion: exactly the successful joins are in", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		s := newSession(t, h, tn)
		completer := racers / 2
		errs := race(func(i int) error {
			if i == completer {
				_, err := h.s.CompleteSession(ctx(t), tn, s.ID, "done")
				return err
			}
			_, err := h.s.JoinSession(ctx(t), tn, s.ID, fmt.Sprintf("agent-%02d", i), store.RoleCollaborator, racers+1)
			return err
		})
		noErr(t, errs[completer])
		var joined []string
		for i, err := range errs {
			switch {
			case i == completer:
			case err == nil:
				joined = append(joined, fmt.Sprintf("agent-%02d", i))
			case !errors.Is(err, store.ErrConflict):
				t.Fatalf("join %d: got %v, want success or ErrConflict", i, err)
			}
		}
		got := must(h.s.GetSession(ctx(t), tn, s.ID))(t)
		equal(t, "status", got.Status, store.SessionCompleted)
		equal(t, "participants", sortedCopy(participantIDs(got)[1:]), append([]string{}, joined...))
		equal(t, "version", got.Version, int64(1+len(joined)+1))
	})

	t.Run("racing completions and failures: exactly one ends the session", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		s := newSession(t, h, tn)
		errs := race(func(i int) error {
			if i%2 == 0 {
				_, err := h.s.CompleteSession(ctx(t), tn, s.ID, fmt.Sprintf("summary %d", i))
				return err
			}
			_, err := h.s.FailSession(ctx(t), tn, s.ID, store.SessionError{Code: "c", Message: fmt.Sprintf("cause %d", i)})
			return err
		})
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("both %d and %d ended the session", winner, i)
			case err == nil:
				winner = i
			case !errors.Is(err, store.ErrConflict):
				t.Fatalf("ending %d: got %v, want success or ErrConflict", i, err)
			}
		}
		if winner < 0 {
			t.Fatal("no call ended the session")
		}
		got := must(h.s.GetSession(ctx(t), tn, s.ID))(t)
		equal(t, "version", got.Version, int64(2))
		if winner%2 == 0 {
			equal(t, "summary", got.Summary, fmt.Sprintf("summary %d", winner))
		} else {
			equal(t, "error", got.Error, &store.SessionError{Code: "c", Message: fmt.Sprintf("cause %d", winner)})
		}
	})

	t.Run("conditional puts with the same version: exactly one wins", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		base := put(t, h, tn, "ns", "k", `"base"`)
		errs := race(func(i int) error {
			_, err := h.s.PutMemory(ctx(t), tn, store.PutMemory{
				Namespace: "ns", Key: "k", Value: json.RawMessage(fmt.Sprintf(`{"writer": %d}`, i)), IfVersion: ptr(base.Version),
			})
			return err
		})
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("both %d and %d won", winner, i)
			case err == nil:
				winner = i
			case !errors.Is(err, store.ErrConflict):
				t.Fatalf("put %d: got %v, want success or ErrConflict", i, err)
			}
		}
		if winner < 0 {
			t.Fatal("no conditional put won")
		}
		got := must(h.s.GetMemory(ctx(t), tn, "ns", "k"))(t)
		equal(t, "version", got.Version, base.Version+1)
		jsonEqual(t, got.Value, json.RawMessage(fmt.Sprintf(`{"writer": %d}`, winner)))
	})

	t.Run("conditional creates: exactly one wins", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		errs := race(func(i int) error {
			_, err := h.s.PutMemory(ctx(t), tn, store.PutMemory{
				Namespace: "ns", Key: "new", Value: json.RawMessage(fmt.Sprint(i)), IfVersion: ptr(int64(0)),
			})
			return err
		})
		wins := slices.IndexFunc(errs, func(err error) bool { return err == nil })
		for i, err := range errs {
			if i != wins && !errors.Is(err, store.ErrConflict) {
				t.Fatalf("create %d: got %v, want ErrConflict (winner %d)", i, err, wins)
			}
		}
		if wins < 0 {
			t.Fatal("no conditional create won")
		}
		got := must(h.s.GetMemory(ctx(t), tn, "ns", "new"))(t)
		equal(t, "version", got.Version, int64(1))
		jsonEqual(t, got.Value, json.RawMessage(fmt.Sprint(wins)))
	})

	t.Run("unconditional puts lose no increment", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		put(t, h, tn, "ns", "k", `0`)
		errs := race(func(i int) error {
			_, err := h.s.PutMemory(ctx(t), tn, store.PutMemory{Namespace: "ns", Key: "k", Value: json.RawMessage(fmt.Sprint(i + 1))})
			return err
		})
		for i, err := range errs {
			if err != nil {
				t.Fatalf("put %d: %v", i, err)
			}
		}
		equal(t, "version", must(h.s.GetMemory(ctx(t), tn, "ns", "k"))(t).Version, int64(1+racers))
	})

	t.Run("unconditional puts to a new key lose no increment", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		errs := race(func(i int) error {
			_, err := h.s.PutMemory(ctx(t), tn, store.PutMemory{Namespace: "ns", Key: "k", Value: json.RawMessage(fmt.Sprint(i))})
			return err
		})
		for i, err := range errs {
			if err != nil {
				t.Fatalf("put %d: %v", i, err)
			}
		}
		equal(t, "version", must(h.s.GetMemory(ctx(t), tn, "ns", "k"))(t).Version, int64(racers))
	})

	t.Run("concurrent registrations of one id: exactly one wins", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		errs := race(func(i int) error {
			_, err := h.s.RegisterAgent(ctx(t), tn, store.Agent{ID: "solo", Description: fmt.Sprint(i)})
			return err
		})
		wins := 0
		for i, err := range errs {
			switch {
			case err == nil:
				wins++
			case !errors.Is(err, store.ErrAlreadyExists):
				t.Fatalf("register %d: got %v, want success or ErrAlreadyExists", i, err)
			}
		}
		equal(t, "winners", wins, 1)
	})
}
