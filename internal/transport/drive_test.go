package transport

import (
	"bufio"
	"context"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	th "github.com/mcp-runtime/mcp-runtime/internal/transport/transporttest"
)

// tcpPair is both ends of a loopback TCP connection.
func tcpPair(t *testing.T) (server, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if client, err = net.Dial("tcp", ln.Addr().String()); err != nil {
		t.Fatal(err)
	}
	if server, err = ln.Accept(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close(); client.Close() })
	return server, client
}

// takenOver serves sess's GET stream on server as a stream taken over
// from net/http, and returns a channel closed when it ends.
func takenOver(h *harness, sess *ClientSession, server net.Conn) <-chan struct{} {
	done := make(chan struct{})
	c, cursor := sess.standalone.attach(-1)
	go func() {
		defer close(done)
		h.tr.serveStream(newConnSink(h.tr, server, nil, true), sess.standalone, c, cursor, false)
	}()
	return done
}

// Events pushed one at a time and then from many goroutines at once,
// each waking the stream's one goroutine out of its read, all reach the
// client, in order: no wake-up is lost between a pass and the read after
// it.
func TestTakenOverStreamLosesNoWakeUp(t *testing.T) {
	const pingPongs, rounds, writers, each = 2000, 40, 4, 50
	// No keep-alive: one would wake a stream that missed a kick.
	h := newHarness(t, withOpts(func(o *Options) { o.KeepAliveInterval = time.Hour }))
	sess := NewClientSession(context.Background(), "s", SessionInit{EventLogSize: pingPongs + rounds*writers*each, Tenant: "t"}, time.Now())
	t.Cleanup(sess.Terminate)
	server, client := tcpPair(t)
	done := takenOver(h, sess, server)
	_ = client.SetReadDeadline(time.Now().Add(th.WaitLong))
	r := bufio.NewReader(client)
	want := 1
	// read reads events up to id g-upto.
	read := func(upto int) {
		for want <= upto {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("after event %d of %d: %v", want-1, upto, err)
			}
			if id, ok := strings.CutPrefix(line, "id: g-"); ok {
				if strings.TrimSpace(id) != strconv.Itoa(want) {
					t.Fatalf("event id g-%s, want g-%d", strings.TrimSpace(id), want)
				}
				want++
			}
		}
	}
	event := []byte(`{"jsonrpc":"2.0","method":"notifications/message"}`)
	// One at a time, each read before the next: the kicks land wherever
	// the stream's goroutine is, between its reads and its passes.
	for i := range pingPongs {
		sess.standalone.append(event)
		read(i + 1)
	}
	for round := range rounds {
		var wg sync.WaitGroup
		for range writers {
			wg.Go(func() {
				for range each {
					sess.standalone.append(event)
				}
			})
		}
		read(pingPongs + (round+1)*writers*each)
		wg.Wait()
	}
	client.Close()
	th.WaitChan(t, done, "the stream to end when its client closes")
}

// pastDeadlines is a connection wrapper that moves every read deadline
// into the past, as connlimit does to a waiting connection at shutdown,
// and that the stream cannot see beneath.
type pastDeadlines struct{ net.Conn }

func (c pastDeadlines) SetReadDeadline(d time.Time) error {
	if !d.IsZero() {
		d = time.Unix(1, 0)
	}
	return c.Conn.SetReadDeadline(d)
}

// A stream whose read deadline is not its own would wake from every read
// at once and spin; it is ended instead, and says why, even while events
// keep coming.
func TestTakenOverStreamThatWouldSpinEnds(t *testing.T) {
	logs := &th.LockedBuffer{}
	h := newHarness(t, withOpts(func(o *Options) { o.Logger = zerolog.New(logs) }))
	sess := NewClientSession(context.Background(), "s", SessionInit{EventLogSize: 16, Tenant: "t"}, time.Now())
	t.Cleanup(sess.Terminate)
	server, _ := tcpPair(t)
	done := takenOver(h, sess, pastDeadlines{server})
	// Events flowing all the while: kicks must not keep it going.
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
				sess.standalone.append([]byte(`{"jsonrpc":"2.0","method":"notifications/message"}`))
			}
		}
	}()
	th.WaitChan(t, done, "the stream to end")
	if !strings.Contains(logs.String(), "read deadline is not its own") {
		t.Errorf("log %q does not say why the stream ended", logs.String())
	}
}

// When the server ends a listen, the notifications queued before the end
// go out before its completion result, which is the stream's last
// message.
func TestTakenOverListenEndsAfterItsQueue(t *testing.T) {
	h := newHarness(t)
	server, client := tcpPair(t)
	l := &listener{sub: protocol.ID(`"l1"`), notes: make(chan *listenNote, 8), end: make(chan struct{})}
	for _, uri := range []string{"memory://t/a", "memory://t/b", "memory://t/c"} {
		l.offer(uriNote(uri))
	}
	l.stop()
	go func() {
		h.tr.writeListen(newConnSink(h.tr, server, nil, true), l)
		server.Close() // as detach does once the stream ends
	}()
	_ = client.SetReadDeadline(time.Now().Add(th.WaitLong))
	var data []string
	r := bufio.NewReader(client)
	for {
		line, err := r.ReadString('\n')
		if err == io.EOF {
			break // the server closes the connection after the end
		}
		if err != nil {
			t.Fatal(err)
		}
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			data = append(data, d)
		}
	}
	if len(data) != 4 {
		t.Fatalf("%d messages, want 3 notifications and the end: %q", len(data), data)
	}
	for i, uri := range []string{"memory://t/a", "memory://t/b", "memory://t/c"} {
		if !strings.Contains(data[i], uri) {
			t.Errorf("message %d is %s, want the update of %s", i, data[i], uri)
		}
	}
	if !strings.Contains(data[3], `"resultType":"`+protocol.ResultComplete+`"`) {
		t.Errorf("last message %s, want the completion result", data[3])
	}
}
