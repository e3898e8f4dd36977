package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-runtime/mcp-runtime/internal/auth"
	"github.com/mcp-runtime/mcp-runtime/internal/config"
	"github.com/mcp-runtime/mcp-runtime/internal/handlers"
	"github.com/mcp-runtime/mcp-runtime/internal/requeststate"
)

// roundSealer is the sealer of multi-round-trip requests' state
// (docs/adr/0045-sealed-request-state.md): the configured key, which
// every replica shares, and the previous ones still opening; without a
// key, one drawn now, so a round continues only on this replica.
func roundSealer(cfg config.Config, log zerolog.Logger) (*handlers.SealedRounds, error) {
	key := []byte(cfg.RequestState.Key)
	if len(key) == 0 {
		key = make([]byte, requeststate.MinKeyBytes)
		_, _ = rand.Read(key) // never fails (crypto/rand)
		if cfg.RedisURL != "" {
			log.Warn().Msg("requestState.key (" + config.EnvRequestStateKey + ") is not set: a multi-round request continues only on the replica that began it; give every replica the same key")
		}
	}
	old := make([][]byte, len(cfg.RequestState.PreviousKeys))
	for i, k := range cfg.RequestState.PreviousKeys {
		old[i] = []byte(k)
	}
	s, err := requeststate.New(time.Now, key, old...)
	if err != nil {
		return nil, fmt.Errorf("request state keys: %w", err)
	}
	return handlers.NewSealedRounds(s, cfg.RequestState.TTL(), func(ctx context.Context) string {
		p, _ := auth.FromContext(ctx)
		return p.ID
	}), nil
}
