package transport

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// The in-memory sweeper ends the sessions idle for longer than the idle
// timeout, and only those: a session with a connected stream, or with a
// request whose client still waits, stays however long it is quiet. Each
// one it ends is reported with how long it lived
// (mcp.server.session.duration); a session its client deleted first is
// not reported again. Time
// is the subject, so it is the bubble's: the test takes no wall-clock
// time and cannot race the sweeper.
func TestMemorySweeperEndsIdleSessionsOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const idle = time.Minute
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var mu sync.Mutex
		var expired []string
		store := newMemorySessions(ctx, idle, 10, sessionCaps{}, time.Now, nil, func(s *ClientSession) {
			mu.Lock()
			defer mu.Unlock()
			expired = append(expired, fmt.Sprintf("%s %v", s.ID(), s.Lived(time.Now())))
		})
		defer store.Close()
		create := func() *ClientSession {
			s, err := store.Create(ctx, SessionInit{Version: protocol.LatestVersion, EventLogSize: 4})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		quiet, streaming, waiting, used, deleted := create(), create(), create(), create(), create()
		if err := store.Delete(ctx, deleted.ID()); err != nil {
			t.Fatal(err)
		}
		reported := func() []string {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(expired)
		}
		conn, _ := streaming.standalone.attach(-1)
		client, leave := context.WithCancel(ctx)
		if err := waiting.begin(protocol.ID("1"), client, func(error) {}); err != nil {
			t.Fatal(err)
		}
		alive := func(s *ClientSession) bool {
			_, err := store.Get(ctx, s.ID())
			if err != nil && !errors.Is(err, ErrSessionNotFound) {
				t.Fatal(err)
			}
			return err == nil
		}

		time.Sleep(idle / 2)
		used.Touch(time.Now())
		time.Sleep(idle/2 + idle/4) // past quiet's timeout, a sweep later
		synctest.Wait()
		if alive(quiet) || !quiet.Ended() {
			t.Fatal("a session idle past the timeout lives on")
		}
		// Swept at the first sweep past its timeout: a sweep runs every
		// quarter of it.
		if got := reported(); len(got) != 1 || got[0] != fmt.Sprintf("%s %v", quiet.ID(), idle+idle/4) {
			t.Fatalf("reported %v, want %s after %v", got, quiet.ID(), idle+idle/4)
		}
		for name, s := range map[string]*ClientSession{"streaming": streaming, "waiting": waiting, "used": used} {
			if !alive(s) {
				t.Fatalf("the %s session was ended", name)
			}
		}

		// Its stream closed and its client gone, each idles out too.
		streaming.standalone.detach(conn)
		leave()
		time.Sleep(idle + idle/4)
		synctest.Wait()
		for name, s := range map[string]*ClientSession{"streaming": streaming, "waiting": waiting, "used": used} {
			if alive(s) {
				t.Fatalf("the %s session, idle since, lives on", name)
			}
		}
		if got := reported(); len(got) != 4 {
			t.Fatalf("reported %v, want the four idle sessions and not the deleted one", got)
		}
	})
}
