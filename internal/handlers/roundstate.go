package handlers

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/requeststate"
	"github.com/mcp-runtime/mcp-runtime/internal/tenant"
)

// SealedRounds is the StateSealer of a deployment: the state is sealed by
// requeststate (docs/adr/0045-sealed-request-state.md) with a key every
// replica holds, so a round continues on any of them, and bound to the
// principal and tenant of the request, its method and its params — all
// but the round's own members and _meta, in a canonical form, so that a
// client's re-encoding of the same request opens it and another request
// does not.
type SealedRounds struct {
	sealer    *requeststate.Sealer
	ttl       time.Duration
	principal func(context.Context) string
}

// NewSealedRounds seals with s for ttl; principal names the caller of a
// request (nil: every caller is the same one).
func NewSealedRounds(s *requeststate.Sealer, ttl time.Duration, principal func(context.Context) string) *SealedRounds {
	if principal == nil {
		principal = func(context.Context) string { return "" }
	}
	return &SealedRounds{sealer: s, ttl: ttl, principal: principal}
}

// Seal implements StateSealer.
func (r *SealedRounds) Seal(ctx context.Context, method string, params json.RawMessage, state []byte) (string, error) {
	b, err := r.binding(ctx, method, params)
	if err != nil {
		return "", err
	}
	return r.sealer.Seal(b, state, r.ttl)
}

// Open implements StateSealer.
func (r *SealedRounds) Open(ctx context.Context, method string, params json.RawMessage, token string) ([]byte, error) {
	b, err := r.binding(ctx, method, params)
	if err != nil {
		return nil, err
	}
	return r.sealer.Open(b, token)
}

func (r *SealedRounds) binding(ctx context.Context, method string, params json.RawMessage) (requeststate.Binding, error) {
	h, err := paramsHash(params)
	if err != nil {
		return requeststate.Binding{}, err
	}
	return requeststate.Binding{Principal: r.principal(ctx), Tenant: tenant.From(ctx), Method: method, Params: h}, nil
}

// roundMembers are the params' members a retry changes.
var roundMembers = [...]string{"_meta", "inputResponses", "requestState"}

// paramsHash hashes params without the round's members, canonically:
// members in key order at every level, numbers as written.
func paramsHash(params json.RawMessage) ([32]byte, error) {
	var m map[string]json.RawMessage
	if len(params) > 0 {
		if err := json.Unmarshal(params, &m); err != nil {
			return [32]byte{}, fmt.Errorf("params: %w", err)
		}
	}
	for _, k := range roundMembers {
		delete(m, k)
	}
	canon := make(map[string]any, len(m))
	for k, v := range m {
		d := json.NewDecoder(bytes.NewReader(v))
		d.UseNumber()
		var x any
		if err := d.Decode(&x); err != nil {
			return [32]byte{}, fmt.Errorf("params.%s: %w", k, err)
		}
		canon[k] = x
	}
	b, err := json.Marshal(canon)
	if err != nil {
		return [32]byte{}, errors.New("params cannot be hashed")
	}
	return sha256.Sum256(b), nil
}
