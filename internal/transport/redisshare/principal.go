package redisshare

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcp-runtime/mcp-runtime/internal/transport"
)

// capLimits are the shares of client sessions one principal and one
// tenant may hold across replicas (docs/adr/0027-session-caps.md); 0
// means no cap.
type capLimits struct{ perPrincipal, perTenant int }

// capSet is one sorted set of sessions that has a cap: the principal's
// or the tenant's.
type capSet struct {
	key   string
	limit int
	full  error // what Create returns when the set is at its cap
}

// capSets lists the capped sets a session of principal in tenant counts
// in: the principal's first, so that a principal over both caps is told
// of its own.
func (m *redisSessions) capSets(principal, tenant string) []capSet {
	var sets []capSet
	if m.caps.perPrincipal > 0 {
		sets = append(sets, capSet{m.capKey("pp:", principal), m.caps.perPrincipal, transport.ErrPrincipalSessions})
	}
	if m.caps.perTenant > 0 {
		sets = append(sets, capSet{m.capKey("pt:", tenant), m.caps.perTenant, transport.ErrTenantSessions})
	}
	return sets
}

// capKey is the sorted set of a principal's ("pp:") or a tenant's ("pt:")
// sessions. The name is hashed: it may hold any character, braces
// included, which would change the key's Cluster slot.
func (m *redisSessions) capKey(kind, name string) string {
	sum := sha256.Sum256([]byte(name))
	return m.prefix + kind + hex.EncodeToString(sum[:16])
}

// reserve takes a place for session id among principal's and tenant's;
// ErrPrincipalSessions or ErrTenantSessions when one has none, and then
// the place taken in the other is given back. Without caps it does
// nothing. The sets are in different Cluster slots, so each has its own
// script, in one pipeline.
func (m *redisSessions) reserve(ctx context.Context, principal, tenant, id string) error {
	sets := m.capSets(principal, tenant)
	if len(sets) == 0 {
		return nil
	}
	now := m.now().UnixMilli()
	cmds := make([]*redis.Cmd, len(sets))
	_, err := m.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, c := range sets {
			cmds[i] = m.lua.reservePlace(ctx, p, capAddArgs{set: c.key, nowMs: now, limit: c.limit, id: id, ttlMs: m.ttlMs()})
		}
		return nil
	})
	for i, c := range sets {
		if ok, cerr := cmds[i].Int(); cerr == nil && ok == 0 && err == nil {
			err = c.full
		}
	}
	if err != nil {
		m.giveBack(sets, id)
	}
	return err
}

// giveBack removes a session that will not be created from the sets it
// may have been reserved in, best effort: one left behind counts until
// its score, the idle timeout, passes.
func (m *redisSessions) giveBack(sets []capSet, id string) {
	// Not the request's context: it may be what ran out.
	ctx, cancel := context.WithTimeout(m.bg, m.timeout)
	defer cancel()
	_, err := m.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, c := range sets {
			p.ZRem(ctx, c.key, id)
		}
		return nil
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		m.log.Debug().Err(err).Msg("transport: a refused client session's place not given back; it frees itself at the idle timeout")
	}
}

// keepPlace, queued with a session's TTL refresh, moves its expiry in the
// sets that count it along with it. It only moves a member that is
// there (ZADD XX): the refresh may be queued just as another replica
// deletes the session, and adding it back would count a session that has
// ended against its principal and tenant until the idle timeout.
func (m *redisSessions) keepPlace(ctx context.Context, p redis.Pipeliner, sc *redisCopy, now time.Time) {
	for _, c := range m.capSets(sc.s.Principal(), sc.s.Tenant()) {
		p.ZAddXX(ctx, c.key, redis.Z{Score: float64(now.UnixMilli() + m.ttlMs()), Member: sc.id})
		p.PExpire(ctx, c.key, m.idle)
	}
}

// retakePlaces puts back the places of sessions written back after Redis
// lost its data, so that they count again; only once the rewrite took,
// since a session it found deleted has none.
func (m *redisSessions) retakePlaces(ctx context.Context, written []*redisCopy) {
	if len(written) == 0 || (m.caps == capLimits{}) {
		return
	}
	now := m.now()
	_, err := m.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, s := range written {
			for _, c := range m.capSets(s.s.Principal(), s.s.Tenant()) {
				p.ZAdd(ctx, c.key, redis.Z{Score: float64(now.UnixMilli() + m.ttlMs()), Member: s.id})
				p.PExpire(ctx, c.key, m.idle)
			}
		}
		return nil
	})
	if err != nil {
		// Counted again at the next write-back, or not until they end: a
		// share is then too large for a while, never too small.
		m.log.Debug().Err(err).Int("sessions", len(written)).Msg("transport: places of written-back client sessions not put back")
	}
}

// release gives up a session's places, queued with its DELETE.
func (m *redisSessions) release(ctx context.Context, p redis.Pipeliner, sc *redisCopy) {
	for _, c := range m.capSets(sc.s.Principal(), sc.s.Tenant()) {
		p.ZRem(ctx, c.key, sc.id)
	}
}
