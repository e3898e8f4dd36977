package transport

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/redis/go-redis/v9"
)

// scriptPrincipalAdd reserves a place for a new client session among the
// principal's (issue 8, point 4), across replicas: KEYS the principal's
// sorted set of session ids scored by expiry; ARGV now (ms), the cap, the
// id, the idle timeout (ms). Members whose session would have expired by
// now are dropped first, so a session that idled out frees its place
// without anyone deleting it. 1 if reserved, 0 if the principal is at
// its cap.
var scriptPrincipalAdd = redis.NewScript(`
local now = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[4]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1`)

// principalKey is the sorted set of a principal's sessions. The id is
// hashed: a principal id may hold any character, braces included, which
// would change the key's Cluster slot.
func (m *redisSessions) principalKey(principal string) string {
	sum := sha256.Sum256([]byte(principal))
	return m.prefix + "pp:" + hex.EncodeToString(sum[:16])
}

// reserve takes a place for session id among principal's; ErrPrincipalSessions
// when there is none. Without a cap it does nothing.
func (m *redisSessions) reserve(ctx context.Context, principal, id string) error {
	if m.perPrincipal <= 0 {
		return nil
	}
	ok, err := scriptPrincipalAdd.Run(ctx, m.rdb, []string{m.principalKey(principal)},
		m.now().UnixMilli(), m.perPrincipal, id, m.ttlMs()).Int()
	if err != nil {
		return err
	}
	if ok == 0 {
		return ErrPrincipalSessions
	}
	return nil
}

// keepPlace, queued with a session's TTL refresh, moves its expiry in the
// principal's set along with it. It adds the member if it is missing, so
// the count heals after Redis lost its data (issue 7, point 6); a session
// deleted meanwhile elsewhere is at worst counted until its idle timeout.
func (m *redisSessions) keepPlace(ctx context.Context, p redis.Pipeliner, s *ClientSession, now time.Time) {
	if m.perPrincipal <= 0 {
		return
	}
	key := m.principalKey(s.principal)
	p.ZAdd(ctx, key, redis.Z{Score: float64(now.UnixMilli() + m.ttlMs()), Member: s.id})
	p.PExpire(ctx, key, m.idle)
}

// release gives up a session's place, queued with its DELETE.
func (m *redisSessions) release(ctx context.Context, p redis.Pipeliner, s *ClientSession) {
	if m.perPrincipal > 0 {
		p.ZRem(ctx, m.principalKey(s.principal), s.id)
	}
}
