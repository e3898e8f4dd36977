// Package heldroute carries the retries of held calls between the
// replicas of a deployment over Redis pub/sub
// (docs/adr/0055-multi-round-trip-requests.md, "Upstreams"): a call that
// a legacy upstream holds open for a modern client's answers lives on one
// replica, and the client's retry, which may land on any, is run there.
//
// Each replica subscribes to a channel of its own,
//
//	<prefix>held:{<replica>}
//
// A replica that gets a retry for another's call publishes the answers
// there with a correlation id and its own name, and waits, within the
// round's deadline, for the step that replica publishes back on the
// asker's channel. Pub/sub keeps nothing: a message lost while a
// subscription reconnects costs the client a retry with the same state
// (the call stays held), never a wrong answer, so no mailbox is kept.
package heldroute

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"
)

// maxWait bounds a round run on another replica when the caller's
// context has no deadline.
const maxWait = 5 * time.Minute

// Route is a replica's end of the held calls' channels.
type Route struct {
	rdb    redis.UniversalClient
	prefix string
	self   string
	log    zerolog.Logger

	mu      sync.Mutex
	waiting map[string]chan []byte // by correlation id
	ready   bool                   // subscribed, so replies can arrive

	ps   *redis.PubSub
	done chan struct{}
}

// New returns the route of a replica on rdb, its keys under prefix, with
// a fresh name.
func New(rdb redis.UniversalClient, prefix string, log zerolog.Logger) *Route {
	return &Route{rdb: rdb, prefix: prefix, self: randomID(8), log: log, waiting: map[string]chan []byte{}}
}

// Self implements federation.HeldRoute.
func (r *Route) Self() string { return r.self }

func (r *Route) channel(replica string) string { return r.prefix + "held:{" + replica + "}" }

// message is what travels on a replica's channel: a round to run (From
// set) or the step of one (From empty).
type message struct {
	Corr    string                     `json:"c"`
	From    string                     `json:"f,omitempty"`
	ID      string                     `json:"i,omitempty"`
	Answers map[string]json.RawMessage `json:"a,omitempty"`
	WaitMs  int64                      `json:"w,omitempty"`
	Step    json.RawMessage            `json:"s,omitempty"`
}

// Serve implements federation.HeldRoute: it subscribes to this replica's
// channel, confirmed before it returns (or failed: go-redis subscribes
// again when the connection comes back), and runs each round it is sent
// on a goroutine of its own, publishing the step back.
func (r *Route) Serve(handle func(ctx context.Context, id string, answers map[string]json.RawMessage) []byte) {
	ctx := context.Background()
	r.ps = r.rdb.Subscribe(ctx, r.channel(r.self))
	r.done = make(chan struct{})
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_, err := r.ps.Receive(cctx)
	cancel()
	if err != nil {
		r.log.Warn().Err(err).Msg("heldroute: not subscribed yet; retries of held calls landing on other replicas fail until Redis answers")
	}
	r.mu.Lock()
	r.ready = err == nil
	r.mu.Unlock()
	// With the subscriptions: one that comes back after Redis did makes
	// the route ready again.
	ch := r.ps.ChannelWithSubscriptions()
	go func() {
		defer close(r.done)
		for m := range ch {
			switch m := m.(type) {
			case *redis.Subscription:
				r.mu.Lock()
				r.ready = m.Kind == "subscribe"
				r.mu.Unlock()
			case *redis.Message:
				r.receive(handle, m.Payload)
			}
		}
	}()
}

func (r *Route) receive(handle func(context.Context, string, map[string]json.RawMessage) []byte, payload string) {
	var m message
	if err := json.Unmarshal([]byte(payload), &m); err != nil || m.Corr == "" {
		r.log.Debug().Msg("heldroute: skipping a malformed message")
		return
	}
	if m.From == "" {
		r.mu.Lock()
		w := r.waiting[m.Corr]
		delete(r.waiting, m.Corr)
		r.mu.Unlock()
		if w != nil {
			w <- m.Step
		}
		return
	}
	go func() {
		wait := time.Duration(m.WaitMs) * time.Millisecond
		if wait <= 0 || wait > maxWait {
			wait = maxWait
		}
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		step := handle(ctx, m.ID, m.Answers)
		b, err := json.Marshal(message{Corr: m.Corr, Step: step})
		if err == nil {
			err = r.rdb.Publish(context.Background(), r.channel(m.From), b).Err()
		}
		if err != nil {
			r.log.Warn().Err(err).Msg("heldroute: the step of a held call's round could not be sent back; the client will retry")
		}
	}()
}

// Continue implements federation.HeldRoute; nil, nil when no replica
// listens under the name replica.
func (r *Route) Continue(ctx context.Context, replica, id string, answers map[string]json.RawMessage) ([]byte, error) {
	corr := randomID(16)
	w := make(chan []byte, 1)
	r.mu.Lock()
	if !r.ready {
		r.mu.Unlock()
		return nil, errors.New("this replica is not subscribed to its channel yet")
	}
	r.waiting[corr] = w
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.waiting, corr)
		r.mu.Unlock()
	}()
	wait := maxWait
	if d, ok := ctx.Deadline(); ok {
		wait = min(time.Until(d), maxWait)
	}
	b, err := json.Marshal(message{Corr: corr, From: r.self, ID: id, Answers: answers, WaitMs: wait.Milliseconds()})
	if err != nil {
		return nil, fmt.Errorf("encode the round: %w", err)
	}
	n, err := r.rdb.Publish(ctx, r.channel(replica), b).Result()
	if err != nil {
		return nil, fmt.Errorf("send the round to replica %s: %w", replica, err)
	}
	if _, cluster := r.rdb.(*redis.ClusterClient); n == 0 && !cluster {
		// No replica listens under that name: it stopped, and its calls
		// with it. (One node counts every subscriber; a cluster node
		// counts only its own, so there the round's deadline tells.)
		return nil, nil
	}
	select {
	case step := <-w:
		return step, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close ends the subscription.
func (r *Route) Close() error {
	if r.ps == nil {
		return nil
	}
	err := r.ps.Close()
	<-r.done
	return err
}

func randomID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
