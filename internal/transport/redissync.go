package transport

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"time"

	"github.com/redis/go-redis/v9"
)

// Scripts keep each change and its announcement one atomic step, so the
// channel's order is the order the hash saw.
var (
	// scriptUpdate: KEYS hash, log; ARGV ttl, channel, message, hset|hdel,
	// field, value. 0 when the session is gone: a change never recreates
	// an ended session's hash.
	scriptUpdate = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if ARGV[4] == 'hdel' then redis.call('HDEL', KEYS[1], ARGV[5]) else redis.call('HSET', KEYS[1], ARGV[5], ARGV[6]) end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
redis.call('PUBLISH', ARGV[2], ARGV[3])
return 1`)
	// scriptDelete: KEYS hash, log, tombstone; ARGV ttl, channel, message.
	scriptDelete = redis.NewScript(`
local e = redis.call('EXISTS', KEYS[1])
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('SET', KEYS[3], '1', 'PX', ARGV[1])
redis.call('PUBLISH', ARGV[2], ARGV[3])
return e`)
	// scriptRefresh: KEYS hash, log; ARGV ttl. 0 when the session is gone.
	scriptRefresh = redis.NewScript(`
if redis.call('PEXPIRE', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return 1`)
	// scriptRewrite puts back a session whose write-through failed, or
	// that Redis lost: KEYS hash, log, tombstone; ARGV ttl, channel,
	// message, the least gseq and gflushed (so event ids never go back),
	// then field/value pairs. home is written only where the hash names
	// none: a replica that claimed it meanwhile holds the stream now. 0 if
	// it was deleted meanwhile (the tombstone).
	scriptRewrite = redis.NewScript(`
if redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
local keep = {}
for i = 6, #ARGV, 2 do keep[ARGV[i]] = true end
for _, f in ipairs(redis.call('HKEYS', KEYS[1])) do
  if string.sub(f, 1, 2) == 's:' and not keep[f] then redis.call('HDEL', KEYS[1], f) end
end
for i = 6, #ARGV, 2 do
  if ARGV[i] == 'home' then redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i+1]) else redis.call('HSET', KEYS[1], ARGV[i], ARGV[i+1]) end
end
for i, f in ipairs({'gseq', 'gflushed'}) do
  if tonumber(redis.call('HGET', KEYS[1], f) or '0') < tonumber(ARGV[3 + i]) then redis.call('HSET', KEYS[1], f, ARGV[3 + i]) end
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
redis.call('PUBLISH', ARGV[2], ARGV[3])
return 1`)
)

// subscribe keeps one subscription to the channel and applies every
// change. After the link was lost — changes published meanwhile are
// missed, pub/sub keeps nothing — every local copy is re-read.
func (m *redisSessions) subscribe() {
	defer m.wg.Done()
	backoff, live := m.tune.minBackoff, false
	for {
		ps := m.rdb.Subscribe(m.bg, m.channel) // an error shows up in Receive
		m.psMu.Lock()
		if m.stopping() {
			m.psMu.Unlock()
			_ = ps.Close()
			return
		}
		m.ps = ps
		m.psMu.Unlock()
		err := m.receive(ps, &live)
		_ = ps.Close()
		if m.stopping() || errors.Is(err, redis.ErrClosed) {
			return
		}
		if live {
			live, backoff = false, m.tune.minBackoff
			m.log.Warn().Err(err).Str("channel", m.channel).Msg("transport: client-session channel lost; re-reading every local session once it is back")
		}
		if !m.sleep(backoff) {
			return
		}
		backoff = min(2*backoff, m.tune.maxBackoff)
	}
}

// receive reads ps until an error, or a link that stays silent: no
// subscription confirmed, or a PING unanswered, within two polls.
func (m *redisSessions) receive(ps *redis.PubSub, live *bool) error {
	idle, pinged := 0, false
	for {
		msg, err := ps.ReceiveTimeout(m.bg, m.tune.poll)
		if m.stopping() {
			return nil
		}
		if err != nil && isTimeout(err) {
			if idle++; idle < 2 {
				continue
			}
			if !*live || pinged {
				return errors.New("client-session channel silent: no subscription confirmed or no answer to PING")
			}
			ctx, cancel := context.WithTimeout(m.bg, m.timeout)
			err = ps.Ping(ctx)
			cancel()
			if err == nil {
				idle, pinged = 0, true
				continue
			}
		}
		if err != nil {
			return err
		}
		idle, pinged = 0, false
		switch msg := msg.(type) {
		case *redis.Subscription:
			if msg.Kind == "subscribe" {
				*live = true
				m.resyncAll()
			}
		case *redis.Message:
			m.onChange(msg.Payload)
		}
	}
}

// onChange applies one change from the channel.
func (m *redisSessions) onChange(payload string) {
	var c sessionChange
	if err := json.Unmarshal([]byte(payload), &c); err != nil || c.ID == "" {
		m.log.Debug().Str("channel", m.channel).Msg("transport: skipping a malformed client-session change")
		return
	}
	if c.Op == opAnswer {
		m.onAnswer(c)
		return
	}
	if c.Op == opCancel {
		m.onCancel(c)
		return
	}
	if c.Op == opEvent {
		m.mu.RLock()
		s := m.byID[c.ID]
		m.mu.RUnlock()
		if s == nil {
			return
		}
		if c.Stream == "" {
			s.standalone.notify()
		} else if st := s.stream(c.Stream); st != nil {
			st.notify() // a POST stream resumed here (redispostlog.go)
		}
		return
	}
	m.mu.Lock()
	if l := m.loading[c.ID]; l != nil {
		l.changes = append(l.changes, c)
		m.mu.Unlock()
		return
	}
	s := m.byID[c.ID]
	switch {
	case s == nil:
	case c.Op == opEnd:
		delete(m.byID, c.ID)
	case c.Op == opSync:
		// Re-read below, outside the lock.
	default:
		s.apply(c, m.self)
	}
	m.mu.Unlock()
	switch {
	case s == nil:
	case c.Op == opEnd:
		s.terminate() // point 5: ended on every replica
	case c.Op == opSync && c.Origin != m.self:
		m.resync([]*ClientSession{s})
	}
}

// resyncAll re-reads every local copy, after changes may have been
// missed.
func (m *redisSessions) resyncAll() {
	var all []*ClientSession
	m.Each(func(s *ClientSession) bool { all = append(all, s); return true })
	m.resync(all)
}

// resync re-reads sessions from Redis; one that is gone (and that this
// replica has no unsaved change for) has ended.
func (m *redisSessions) resync(all []*ClientSession) {
	if len(all) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(m.bg, m.timeout+time.Duration(len(all))*time.Millisecond)
	defer cancel()
	cmds := make([]*redis.MapStringStringCmd, len(all))
	_, err := m.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, s := range all {
			cmds[i] = p.HGetAll(ctx, m.hashKey(s.id))
		}
		return nil
	})
	if err != nil {
		m.failed(err)
		return
	}
	for i, s := range all {
		switch h := cmds[i].Val(); {
		case s.isDirty():
			// Holds a change Redis lacks: the sweeper writes it back.
		case h["v"] != "":
			s.reset(h, m.self)
		default:
			m.missing(s)
		}
	}
}

// sweep, every idle/4: extends the TTL of the sessions used here since
// the last round (so a request never pays for it) and of those with work
// running here, rewrites those whose write-through failed, lets go of
// copies idle here (the session lives on in Redis), and ends the copies
// whose session ended elsewhere.
func (m *redisSessions) sweep(every time.Duration) {
	defer m.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	beat := time.NewTicker(m.tune.heartbeat)
	defer beat.Stop()
	last := m.now()
	for {
		select {
		case <-m.stop:
			return
		case <-beat.C:
			m.heartbeat(true) // issue 7 point 2: homes are taken over from dead replicas
			continue
		case <-t.C:
		case <-m.kick: // Redis answers again: write back what it missed now
		}
		now := m.now()
		cutoff := now.Add(-m.idle)
		var refresh, rewrite, check []*ClientSession
		m.Each(func(s *ClientSession) bool {
			switch {
			case s.isDirty():
				rewrite = append(rewrite, s)
			case !s.idleSince(last):
				refresh = append(refresh, s)
			case s.busy():
				// A handler runs here (or waits on the client) however
				// long the client stays away or works elsewhere: the
				// session, and the logs of its POST streams, must not
				// expire under it, nor the copy be let go (issue 7,
				// point 5 of the review).
				refresh = append(refresh, s)
			case !s.idleSince(cutoff):
			case s.isHome():
				// The home copy stays until the session ends, so that
				// tools/list_changed keeps reaching its log.
				check = append(check, s)
			default:
				m.evict(s, cutoff) // unless a request got it meanwhile
			}
			return true
		})
		last = now
		if m.skipping() != nil {
			for _, s := range refresh {
				s.markDirty() // its TTL may run out before Redis is back
			}
			continue
		}
		m.housekeep(refresh, rewrite, check)
	}
}

// housekeep runs one sweep's Redis work in one pipeline.
func (m *redisSessions) housekeep(refresh, rewrite, check []*ClientSession) {
	n := len(refresh) + len(rewrite) + len(check)
	if n == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(m.bg, m.timeout+time.Duration(n)*time.Millisecond)
	defer cancel()
	cmds := make([]*redis.Cmd, 0, len(refresh)+len(rewrite))
	exists := make([]*redis.IntCmd, 0, len(check))
	for _, s := range rewrite {
		s.mu.Lock()
		s.dirty = false // a change from now on marks it again
		s.mu.Unlock()
	}
	all, err := m.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, s := range refresh {
			cmds = append(cmds, scriptRefresh.Eval(ctx, p, []string{m.hashKey(s.id), m.logKey(s.id)}, m.ttlMs()))
			// The reverse index's sets live as long as their members.
			m.touchSubs(ctx, p, s.tenant, s.subscriptions())
			// So do the logs of POST streams whose handler runs here,
			// however long it stays silent (issue 7 point 3).
			for _, k := range s.mirroredKeys() {
				p.PExpire(ctx, k, m.idle)
			}
		}
		for _, s := range rewrite {
			fields, err := sessionFields(s)
			if err != nil {
				return err
			}
			msg, _ := json.Marshal(sessionChange{Origin: m.self, ID: s.id, Op: opSync}) // strings always encode
			seq, flushed := s.standalone.position()
			args := append([]any{m.ttlMs(), m.channel, msg, seq, flushed}, fields...)
			cmds = append(cmds, scriptRewrite.Eval(ctx, p, []string{m.hashKey(s.id), m.logKey(s.id), m.endKey(s.id)}, args...))
			// Subscriptions made while Redis was away; the ones dropped
			// meanwhile are removed when an update finds them gone.
			m.indexSubs(ctx, p, s.id, s.tenant, s.subscriptions(), true)
		}
		for _, s := range check {
			exists = append(exists, p.Exists(ctx, m.hashKey(s.id)))
		}
		return nil
	})
	// A reply Redis gave (a script error) is about one command; anything
	// else is about the link, or a Redis briefly unable to serve
	// (outage), and the whole round is marked for later.
	if err := outage(err, all); err != nil {
		m.failed(err)
		for _, s := range append(refresh, rewrite...) {
			s.markDirty()
		}
		return
	}
	m.ok()
	sessions := append(refresh, rewrite...)
	for i, c := range cmds {
		v, err := c.Int()
		switch {
		case err != nil:
			m.log.Error().Err(err).Str("session", sessions[i].id).Msg("transport: client-session refresh refused by redis")
			if i >= len(refresh) {
				// dirty was cleared before the rewrite was sent: the
				// change it carried is still not in Redis (point 6).
				sessions[i].markDirty()
			}
		case v == 0 && i < len(refresh):
			m.missing(sessions[i])
		case v == 0:
			m.drop(sessions[i].id) // deleted (point 5): the tombstone says so
		}
	}
	for i, c := range exists {
		if n, err := c.Result(); err == nil && n == 0 {
			m.drop(check[i].id)
		}
	}
}

// outage returns what makes a whole pipeline fail, so that it is retried
// (issue 7, point 6): an error that is not a reply (the link, a
// timeout), or, on any command, a reply of a Redis briefly unable to
// serve anyone (retryableReply). nil when every failure is a verdict on
// its own command (a script error).
func outage(err error, cmds []redis.Cmder) error {
	if err == nil {
		return nil
	}
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return err
	}
	for _, c := range cmds {
		if e := c.Err(); e != nil && retryableReply(e) {
			return e
		}
	}
	return nil
}

// retryableReply reports whether err is an error reply Redis gives while
// it cannot serve for a moment — a failover (READONLY, MASTERDOWN), a
// restart loading its data (LOADING), a script running too long (BUSY),
// a cluster resharding or down (TRYAGAIN, CLUSTERDOWN), memory full
// (OOM) — rather than a verdict on the command.
func retryableReply(err error) bool {
	if redis.IsReadOnlyError(err) || redis.IsLoadingError(err) || redis.IsMasterDownError(err) ||
		redis.IsTryAgainError(err) || redis.IsClusterDownError(err) {
		return true
	}
	for _, prefix := range []string{"READONLY", "LOADING", "BUSY", "TRYAGAIN", "CLUSTERDOWN", "MASTERDOWN", "OOM"} {
		if redis.HasErrorPrefix(err, prefix) {
			return true
		}
	}
	return false
}

func (s *ClientSession) isDirty() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dirty
}

func (m *redisSessions) stopping() bool {
	select {
	case <-m.stop:
		return true
	default:
		return false
	}
}

// sleep waits d; false if the store stopped meanwhile.
func (m *redisSessions) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-m.stop:
		return false
	case <-t.C:
		return true
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		(errors.As(err, &ne) && ne.Timeout())
}
