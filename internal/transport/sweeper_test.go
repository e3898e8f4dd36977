package transport

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// The in-memory sweeper ends the sessions idle for longer than the idle
// timeout, and only those: a session with a connected stream, or with a
// request whose client still waits, stays however long it is quiet. Time
// is the subject, so it is the bubble's: the test takes no wall-clock
// time and cannot race the sweeper.
func TestMemorySweeperEndsIdleSessionsOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const idle = time.Minute
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		store := newMemorySessions(ctx, idle, 10, sessionCaps{}, time.Now, nil)
		defer store.Close()
		create := func() *ClientSession {
			s, err := store.Create(ctx, SessionInit{Version: protocol.LatestVersion, EventLogSize: 4})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		quiet, streaming, waiting, used := create(), create(), create(), create()
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
	})
}
