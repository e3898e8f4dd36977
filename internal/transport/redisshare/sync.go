package redisshare

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
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
// subscription confirmed, or a PING unanswered (receiveLive).
func (m *redisSessions) receive(ps *redis.PubSub, live *bool) error {
	for {
		msg, err := receiveLive(m.bg, ps, m.tune.poll, m.timeout, *live)
		if m.stopping() {
			return nil
		}
		if err != nil {
			return err
		}
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

// errSilentLink: a pub/sub link answered neither a subscription nor a
// PING.
var errSilentLink = errors.New("pub/sub link silent: no subscription confirmed or no answer to PING")

// receiveLive waits on ps, poll at a time, for its next message. A
// half-open link reports nothing by itself: after two quiet polls it is
// pinged, when mayPing (its subscription was confirmed), and after two
// more without the answer it is given up (errSilentLink). Any other
// error, and ctx's end, is returned as it is. The three subscribers of
// the package share it: the sessions' channel, the shard links and the
// listen channels.
func receiveLive(ctx context.Context, ps *redis.PubSub, poll, pingTimeout time.Duration, mayPing bool) (any, error) {
	idle, pinged := 0, false
	for {
		msg, err := ps.ReceiveTimeout(ctx, poll)
		if err == nil || !isTimeout(err) || ctx.Err() != nil {
			return msg, err
		}
		if idle++; idle < 2 {
			continue
		}
		if pinged || !mayPing {
			return nil, errSilentLink
		}
		pctx, cancel := context.WithTimeout(ctx, pingTimeout)
		err = ps.Ping(pctx)
		cancel()
		if err != nil {
			return nil, err
		}
		idle, pinged = 0, true
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
			s.s.Standalone().Notify()
		} else if st := s.s.Stream(c.Stream); st != nil {
			st.Notify() // a POST stream resumed here (postlog.go)
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
		s.apply(c)
	}
	m.mu.Unlock()
	switch {
	case s == nil:
	case c.Op == opEnd:
		m.unwatchChanges(c.ID)
		s.s.Terminate() // DELETE or expiry ends it on every replica
	case c.Op == opSync && c.Origin != m.self:
		m.resync([]*redisCopy{s})
	}
}

// resyncAll re-reads every local copy, after changes may have been
// missed.
func (m *redisSessions) resyncAll() { m.resync(m.copies()) }

// resync re-reads sessions from Redis; one that is gone (and that this
// replica has no unsaved change for) has ended.
func (m *redisSessions) resync(all []*redisCopy) {
	if len(all) == 0 {
		return
	}
	for _, s := range all {
		s.startReread()
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
		for _, s := range all {
			s.endReread()
		}
		return
	}
	hashes := make([]map[string]string, len(all))
	for i := range all {
		hashes[i] = cmds[i].Val()
	}
	m.reread(all, hashes)
}

// reread brings each copy of all to hashes[i], what Redis held when it
// was read. The client's changes heard on the channel since the read
// was sent are applied again on top: the hash may predate them, and every
// change is an assignment, so one the hash already holds changes nothing
// (as for a copy being built, loadCall).
func (m *redisSessions) reread(all []*redisCopy, hashes []map[string]string) {
	for i, s := range all {
		switch h := hashes[i]; {
		case h["v"] != "":
			// Changes this copy holds that Redis lacks stay on top, and
			// the sweeper replays them; a copy that was to be written
			// back was by another replica. Under mu, as the channel's
			// changes are applied: none lands between the reset and the
			// changes heard.
			m.mu.Lock()
			s.reset(h)
			for _, ch := range s.endReread() {
				if cc, ok := fromWire(ch); ok {
					s.s.ApplyChange(cc)
				}
			}
			m.mu.Unlock()
			if s.clearLost() {
				m.kickSweep()
			}
			if s.glog.awaitsPosition() {
				// A GET opened during the outage reads from now on,
				// rather than at its next keep-alive.
				s.s.Standalone().Notify()
			}
		default:
			s.endReread()
			m.missing(s)
		}
	}
}

// sweep, every idle/4: extends the TTL of the sessions used here since
// the last round (so a request never pays for it), of those with work
// running here, and of those whose refresh could not be sent; replays the
// changes whose write-through failed, writes back the copies whose hash
// Redis lost, lets go of copies idle here (the session lives on in
// Redis), and ends the copies whose session ended elsewhere. After an
// outage it first re-reads every copy.
func (m *redisSessions) sweep(every time.Duration) {
	defer m.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	beat := time.NewTicker(m.tune.heartbeat)
	defer beat.Stop()
	// backoff runs while a retry is due (retrySoon); nil otherwise.
	var backoff *time.Timer
	var retryAt <-chan time.Time
	last := m.now()
	for {
		select {
		case <-m.stop:
			if backoff != nil {
				backoff.Stop()
			}
			return
		case <-beat.C:
			m.heartbeat(true) // homes are taken over from dead replicas
			m.beats.Add(1)
			continue
		case <-m.retry:
			if backoff == nil {
				backoff = time.NewTimer(m.tune.minBackoff)
				retryAt = backoff.C
			}
			continue
		case <-retryAt:
			backoff, retryAt = nil, nil
		case <-t.C:
		case <-m.kick: // Redis answers again: write back what it missed now
		}
		last = m.sweepRound(last)
		m.sweeps.Add(1)
	}
}

// sweepRound is one round of sweep, for the copies used since last; it
// returns when this round started, the next one's last.
func (m *redisSessions) sweepRound(last time.Time) time.Time {
	if m.resyncDue.Swap(false) {
		m.resyncAll() // after an outage: missed changes, or lost data
	}
	now := m.now()
	cutoff := now.Add(-m.idle)
	var refresh, replay, rewrite, check []*redisCopy
	for _, s := range m.copies() {
		lost, unsaved, due := s.syncState()
		switch {
		case lost && s.s.IdleSince(cutoff) && !s.s.Busy():
			// Its client left while Redis could not take it back: the
			// idle timeout ends it, everywhere
			// (docs/adr/0025-shared-copy-lifetime.md), rather than a
			// write-back bringing it back.
			m.evict(s, cutoff)
			continue
		case lost:
			rewrite = append(rewrite, s)
			continue
		}
		if unsaved {
			replay = append(replay, s)
		}
		switch {
		case due || !s.s.IdleSince(last):
			refresh = append(refresh, s)
		case s.s.Busy():
			// A handler runs here (or waits on the client) however long
			// the client stays away or works elsewhere: the session, and
			// the logs of its POST streams, must not expire under it, nor
			// the copy be let go (docs/adr/0025-shared-copy-lifetime.md).
			refresh = append(refresh, s)
		case unsaved || !s.s.IdleSince(cutoff):
		case s.IsHome():
			// The home copy stays until the session ends, so that
			// tools/list_changed keeps reaching its log.
			check = append(check, s)
		default:
			m.evict(s, cutoff) // unless a request got it meanwhile
		}
	}
	last = now
	if m.skipping() != nil {
		// Retried at the next round. Not a reason to write the copy back:
		// it may only have served reads, and its view would undo what
		// other replicas acknowledged
		// (docs/adr/0024-replay-changes-after-outage.md).
		for _, s := range refresh {
			s.setRefreshDue(true)
		}
		return now
	}
	m.housekeep(refresh, replay, rewrite, check)
	return now
}

// housekeep runs one sweep's Redis work in one pipeline: refresh the
// TTLs, replay the unsaved changes of replay's copies, write back the
// copies of rewrite, whose hash Redis lost, and check that the idle home
// copies of check still have a session.
func (m *redisSessions) housekeep(refresh, replay, rewrite, check []*redisCopy) {
	n := len(refresh) + len(replay) + len(rewrite) + len(check)
	if n == 0 {
		return
	}
	// No write-through of these sessions crosses their replay or rewrite,
	// which would undo it (docs/adr/0024-replay-changes-after-outage.md):
	// it waits for this round.
	locked := slices.Concat(replay, rewrite)
	for _, s := range locked {
		s.wmu.Lock()
	}
	defer func() {
		for _, s := range locked {
			s.wmu.Unlock()
		}
	}()
	ops := make([][]sessionChange, len(replay))
	for i, s := range replay {
		ops[i] = s.takeUnsaved()
		n += len(ops[i])
	}
	type rewriteOf struct {
		s    *redisCopy
		args rewriteArgs
	}
	rewrites := make([]rewriteOf, 0, len(rewrite))
	for _, s := range rewrite {
		fields, err := sessionFields(s)
		if err != nil {
			m.log.Error().Err(err).Str("session", store.ClientSessionHandle(s.id)).Msg("transport: cannot encode client session for redis")
			continue
		}
		msg, _ := json.Marshal(sessionChange{Origin: m.self, ID: s.id, Op: opSync}) // strings always encode
		seq, flushed := s.s.Standalone().Position()
		rewrites = append(rewrites, rewriteOf{s, rewriteArgs{
			hash: m.hashKey(s.id), log: m.logKey(s.id), tombstone: m.endKey(s.id),
			ttlMs: m.ttlMs(), channel: m.changeChannel(s.id), msg: msg, gseq: seq, gflushed: flushed, fields: fields,
		}})
	}
	for _, s := range refresh {
		s.setRefreshDue(false) // set again if this round fails
	}
	ctx, cancel := context.WithTimeout(m.bg, m.timeout+time.Duration(n)*time.Millisecond)
	defer cancel()
	refreshed := make([]*redis.Cmd, 0, len(refresh))
	replayed := make([][]*redis.Cmd, len(replay))
	rewritten := make([]*redis.Cmd, 0, len(rewrites))
	exists := make([]*redis.IntCmd, 0, len(check))
	all, err := m.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, s := range refresh {
			refreshed = append(refreshed, m.lua.refreshSession(ctx, p, m.hashKey(s.id), m.logKey(s.id), m.ttlMs()))
			m.keepPlace(ctx, p, s, m.now())
			// The reverse index's sets live as long as their members.
			_, subs := s.s.ClientState()
			m.touchSubs(ctx, p, s.s.Tenant(), subs)
			// So do the logs of POST streams whose handler runs here,
			// however long it stays silent, so a resume finds them
			// (docs/adr/0018-streamed-responses-resume-anywhere.md).
			for _, k := range mirroredKeys(s.s) {
				p.PExpire(ctx, k, m.idle)
			}
		}
		// Only what the client changed here while Redis did not take it,
		// each change as an idempotent HSET/HDEL published like a
		// write-through: what other replicas acknowledged meanwhile
		// stands (docs/adr/0024-replay-changes-after-outage.md).
		for i, s := range replay {
			for _, c := range ops[i] {
				replayed[i] = append(replayed[i], m.evalChange(ctx, p, s, c, true))
			}
		}
		for _, r := range rewrites {
			rewritten = append(rewritten, m.lua.rewriteSession(ctx, p, r.args))
			// Subscriptions made while Redis was away; the ones dropped
			// meanwhile are removed when an update finds them gone.
			_, subs := r.s.s.ClientState()
			m.indexSubs(ctx, p, r.s.id, r.s.s.Tenant(), subs, true)
		}
		for _, s := range check {
			exists = append(exists, p.Exists(ctx, m.hashKey(s.id)))
		}
		return nil
	})
	// A reply Redis gave (a script error) is about one command; anything
	// else is about the link, or a Redis briefly unable to serve
	// (outage), and the whole round is retried later: the refreshes are
	// due again, the changes unsaved again, the lost copies still lost.
	if err := outage(err, all); err != nil {
		m.failed(err)
		for _, s := range refresh {
			s.setRefreshDue(true)
		}
		for i, s := range replay {
			s.restoreUnsaved(ops[i]...)
		}
		if len(replay)+len(rewrite) > 0 {
			m.retrySoon()
		}
		return
	}
	m.ok()
	var reread []*redisCopy
	for i, c := range refreshed {
		s := refresh[i]
		switch v, err := c.Int(); {
		case err != nil:
			m.log.Error().Err(err).Str("session", store.ClientSessionHandle(s.id)).Msg("transport: client-session refresh refused by redis")
			s.setRefreshDue(true)
		case v == 0:
			m.missing(s)
		}
	}
	for i, s := range replay {
		gone := false
		for j, c := range replayed[i] {
			switch v, _, err := updateResult(c); {
			case err != nil:
				m.log.Error().Err(err).Str("session", store.ClientSessionHandle(s.id)).Msg("transport: client-session change refused by redis")
				s.restoreUnsaved(ops[i][j]) // still not in Redis: replayed next round
			case v == 0:
				// Written back with the copy, or replayed again if
				// another replica writes the session back first.
				s.restoreUnsaved(ops[i][j])
				gone = true
			case v == 2:
				reread = append(reread, s) // a newer home claim stands
			}
		}
		if gone {
			m.missing(s)
		}
	}
	var written []*redisCopy
	for i, c := range rewritten {
		s := rewrites[i].s
		switch v, err := c.Int(); {
		case err != nil:
			// Still lost: tried again at the next round, so nothing
			// acknowledged is lost to an outage.
			m.log.Error().Err(err).Str("session", store.ClientSessionHandle(s.id)).Msg("transport: client-session rewrite refused by redis")
		case v == 0:
			m.drop(s.id) // deleted (DELETE or expiry): the tombstone says so
		case v == 1:
			s.written()
			written = append(written, s)
		default:
			// Another replica wrote it back first: take its view, then
			// replay this copy's unsaved changes on it.
			reread = append(reread, s)
		}
	}
	for i, c := range exists {
		if n, err := c.Result(); err == nil && n == 0 {
			m.drop(check[i].id)
		}
	}
	m.retakePlaces(ctx, written)
	if len(reread) > 0 {
		m.resync(reread)
	}
}

// outage returns what makes a whole pipeline fail, so that it is retried
// (docs/adr/0023-get-needs-redis-position.md): an error that is not a
// reply (the link, a timeout), or, on any command, a reply of a Redis
// briefly unable to serve anyone (retryableReply). nil when every failure
// is a verdict on its own command (a script error).
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
