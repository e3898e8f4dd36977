package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"github.com/rs/zerolog"
	"golang.org/x/time/rate"
)

// keySet is the issuer's JWKS: fetched at start-up, refreshed in the
// background every interval, and fetched again when a token names a kid
// it does not hold (the issuer rotated its keys) — at most once per
// minRefresh, so made-up kids cannot turn into a flood of requests to the
// issuer. A token arriving while that budget is spent is refused at once
// rather than held.
//
// keyfunc's own unknown-kid refresh is not used: it waits for its rate
// limiter under the same deadline as the fetch, so either requests queue
// behind the limiter or the fetch gets no time.
type keySet struct {
	url     string
	parent  context.Context
	opts    jwkset.HTTPClientStorageOptions
	limiter *rate.Limiter
	// minRefresh is the limiter's period, the retry hint after a failed
	// fetch.
	minRefresh time.Duration
	mu         sync.Mutex // one fetch at a time
	cur        atomic.Pointer[keyStore]
}

type keyStore struct {
	kf     keyfunc.Keyfunc
	cancel context.CancelFunc // stops its background refresh
}

func newKeySet(ctx context.Context, url string, client *http.Client, interval, minRefresh time.Duration, log zerolog.Logger) (*keySet, error) {
	s := &keySet{url: url, parent: ctx, limiter: rate.NewLimiter(rate.Every(minRefresh), 1), minRefresh: minRefresh, opts: jwkset.HTTPClientStorageOptions{
		Client:          client,
		HTTPTimeout:     10 * time.Second,
		RefreshInterval: interval,
		RefreshErrorHandler: func(_ context.Context, err error) {
			log.Warn().Err(err).Str("jwksURL", url).Msg("fetching the issuer's JWKS failed; tokens signed with keys not yet known are refused")
		},
	}}
	// An issuer down at start-up does not stop the server: the set is
	// fetched again when a token needs a key.
	if err := s.load(true); err != nil {
		return nil, fmt.Errorf("auth.oauth.jwksURL: %w", err)
	}
	return s, nil
}

// load fetches the set into a new store and swaps it in. With tolerate, a
// failed fetch still installs the (empty) store; without, the old store
// stays.
func (s *keySet) load(tolerate bool) error {
	ctx, cancel := context.WithCancel(s.parent)
	o := s.opts
	o.Ctx, o.NoErrorReturnFirstHTTPReq = ctx, tolerate
	st, err := jwkset.NewStorageFromHTTP(s.url, o)
	if err != nil {
		cancel()
		return err
	}
	kf, err := keyfunc.New(keyfunc.Options{Ctx: ctx, Storage: st})
	if err != nil {
		cancel()
		return err
	}
	if old := s.cur.Swap(&keyStore{kf: kf, cancel: cancel}); old != nil {
		old.cancel()
	}
	return nil
}

// keyfunc returns the verification key of a token, for jwt.Parse.
func (s *keySet) keyfunc(ctx context.Context) jwt.Keyfunc {
	return func(t *jwt.Token) (any, error) {
		cur := s.cur.Load()
		key, err := cur.kf.KeyfuncCtx(ctx)(t)
		if err == nil || !errors.Is(err, jwkset.ErrKeyNotFound) {
			return key, err
		}
		s.mu.Lock()
		if s.cur.Load() == cur { // nobody fetched meanwhile
			if r := s.limiter.Reserve(); r.Delay() > 0 {
				// The budget is spent (by a rotation moments ago, or by
				// made-up kids): the key may well exist. Not a 401, which
				// would make the client drop a good token: retry after
				// the next fetch is allowed. Any fetch loads the whole
				// set, so a rotated-in key is known within one period.
				wait := r.Delay()
				r.Cancel()
				s.mu.Unlock()
				return nil, &keysUnavailable{retryAfter: wait, why: "the issuer's keys were fetched moments ago"}
			}
			if lerr := s.load(false); lerr != nil {
				s.opts.RefreshErrorHandler(ctx, lerr)
				s.mu.Unlock()
				return nil, &keysUnavailable{retryAfter: s.minRefresh, why: "the issuer's keys cannot be fetched"}
			}
		}
		s.mu.Unlock()
		return s.cur.Load().kf.KeyfuncCtx(ctx)(t)
	}
}

// has reports whether the current set holds kid: read in memory, no fetch.
func (s *keySet) has(ctx context.Context, kid string) bool {
	_, err := s.cur.Load().kf.Storage().KeyRead(ctx, kid)
	return err == nil
}

// keysUnavailable: a token names a key this server cannot check now (the
// refetch budget is spent, or the issuer does not answer). It is the
// server's state, not the token's fault: 503 with Retry-After.
type keysUnavailable struct {
	retryAfter time.Duration
	why        string
}

func (e *keysUnavailable) Error() string { return e.why }
