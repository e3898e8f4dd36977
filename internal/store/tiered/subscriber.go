package tiered

import (
	"context"
	"errors"
	"net"
	"os"

	"github.com/redis/go-redis/v9"

	"github.com/mcp-runtime/mcp-runtime/internal/redisconn"
)

// The subscriber waits tune.pubsubPoll for a message at a time; after
// pubsubIdle quiet polls it PINGs the link, and if another pubsubIdle
// polls bring nothing, not even the PONG, it takes the link for dead
// (a half-open connection never reports an error by itself).
const pubsubIdle = 2

var errSilentLink = errors.New("pub/sub link silent: no subscription confirmed or no answer to PING")

// subscribe is the subscriber goroutine: it keeps one subscription to the
// invalidation channel and applies every message to tier 1. A link it
// gives up on is replaced by a new subscription after a backoff.
func (s *Store) subscribe() {
	defer s.wg.Done()
	tune := s.t2.tune
	backoff := tune.minBackoff
	for {
		ctx, cancel := context.WithTimeout(s.bg, tune.pubsubPoll)
		ps := s.t2.rdb.Subscribe(ctx, s.t2.channel) // an error shows up in Receive
		cancel()
		if !s.setPubSub(ps) {
			_ = ps.Close()
			return
		}
		err := s.receive(ps)
		_ = ps.Close()
		if err == nil { // stopping
			return
		}
		if s.l1.live.Load() { // it worked for a while: start the backoff afresh
			backoff = tune.minBackoff
		}
		s.linkDown(err)
		if !sleep(s.stop, backoff) {
			return
		}
		backoff = min(2*backoff, tune.maxBackoff)
	}
}

// receive reads ps until it is closed (nil) or its link is found silent:
// a subscription never confirmed, or a PING never answered, within
// pubsubIdle polls. After any other error go-redis reconnects and
// resubscribes by itself on the next Receive; meanwhile the subscriber
// marks the link down and backs off.
func (s *Store) receive(ps *redis.PubSub) error {
	tune := s.t2.tune
	idle, pinged := 0, false
	backoff := tune.minBackoff
	for {
		ctx, cancel := context.WithTimeout(s.bg, tune.pubsubPoll)
		msg, err := ps.ReceiveTimeout(ctx, tune.pubsubPoll)
		cancel()
		if s.stopping() {
			return nil
		}
		if err != nil && isTimeout(err) {
			if idle++; idle < pubsubIdle {
				continue
			}
			if pinged || !s.l1.live.Load() {
				return errSilentLink
			}
			ctx, cancel := context.WithTimeout(s.bg, s.t2.conn.Timeout(redisconn.Hot))
			err = ps.Ping(ctx)
			cancel()
			if err == nil {
				idle, pinged = 0, true
				continue
			}
		}
		if err != nil {
			s.linkDown(err)
			if !sleep(s.stop, backoff) {
				return nil
			}
			backoff = min(2*backoff, tune.maxBackoff)
			continue
		}
		idle, pinged, backoff = 0, false, tune.minBackoff
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				s.linkUp()
			}
		case *redis.Message:
			s.onMessage(m.Payload)
		}
	}
}

// linkUp handles a subscription confirmation.
func (s *Store) linkUp() {
	switch {
	case !s.subscribed:
		s.subscribed = true
		s.l1.setLive(true)
		s.log.Info().Str("channel", s.t2.channel).Msg("tiered: subscribed to invalidations; tier 1 in use")
	case s.l1.live.Load():
		// go-redis reconnected underneath without an error reaching
		// us: messages may have been lost in between.
		s.l1.flush()
		s.log.Info().Msg("tiered: invalidation subscription renewed; tier 1 flushed")
	default:
		s.l1.setLive(true)
		s.log.Info().Msg("tiered: invalidation subscription restored; tier 1 in use again")
	}
}

// linkDown stops the use of tier 1 (and drops it) until the next
// confirmation: from now on invalidations may be missed.
func (s *Store) linkDown(err error) {
	if !s.l1.live.Load() {
		return
	}
	s.l1.setLive(false)
	s.l1.flushes.Add(1)
	s.log.Warn().Err(err).Msg("tiered: invalidation subscription lost; tier 1 flushed and bypassed until it is back")
}

// onMessage applies one invalidation message. It is counted once applied,
// so whoever sees the count (Stats, the tests) also sees its effect.
func (s *Store) onMessage(payload string) {
	defer s.received.Add(1)
	k, flush, err := decodeMessage(payload)
	switch {
	case err != nil:
		s.log.Debug().Err(err).Msg("tiered: ignoring a message on the invalidation channel")
	case flush:
		s.l1.flush()
	default:
		s.l1.invalidate(k)
	}
}

// setPubSub records the current subscription for Close; false once Close
// has begun.
func (s *Store) setPubSub(ps *redis.PubSub) bool {
	s.psMu.Lock()
	defer s.psMu.Unlock()
	if s.closing {
		return false
	}
	s.ps = ps
	return true
}

func (s *Store) stopping() bool {
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		(errors.As(err, &ne) && ne.Timeout())
}
