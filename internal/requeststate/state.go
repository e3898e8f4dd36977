// Package requeststate seals the requestState of a multi-round-trip
// request (basic/patterns/mrtr): the state a server hands the client with
// an input_required result and gets back with the retry. The client holds
// it, so it is attacker-controlled; sealed here, it cannot be read,
// altered, replayed under another principal, tenant, method or set of
// parameters, or used after it expires, and any replica holding the
// deployment's key can open it — a round may continue anywhere.
//
// A token is "v1." followed by base64url of: the sealing key's id (4
// bytes), the expiry (8 bytes, Unix milliseconds), a random nonce and the
// AES-256-GCM ciphertext of the payload. The binding (principal, tenant,
// method, parameters' hash) and the expiry are authenticated as additional
// data, so a token opens only for the request it was made for.
package requeststate

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// MinKeyBytes is the shortest secret accepted: 256 bits.
const MinKeyBytes = 32

// MaxTokenBytes bounds a token a client sends back: larger ones are
// refused before any decoding.
const MaxTokenBytes = 64 << 10

// MaxPayloadBytes is the largest payload Seal takes: its token is at most
// MaxTokenBytes long, so every token Seal returns is one Open can take.
const MaxPayloadBytes = (MaxTokenBytes-len(prefix))*3/4 - idLen - expLen - gcmNonceBytes - gcmTagBytes

// The sizes of cipher.NewGCM's nonce and tag.
const (
	gcmNonceBytes = 12
	gcmTagBytes   = 16
)

const (
	prefix   = "v1."
	idLen    = 4
	expLen   = 8
	infoAEAD = "mcp-runtime requestState v1"
)

// Errors Open returns; each is a refusal of the retry, not a server fault.
var (
	ErrMalformed = errors.New("requestState is not one this server issued")
	ErrForeign   = errors.New("requestState does not belong to this request, or was altered")
	ErrExpired   = errors.New("requestState has expired")
)

// Binding is what a token is made for; Open refuses it for anything else.
type Binding struct {
	Principal, Tenant, Method string
	// Params is a hash of the request's parameters apart from the round's
	// answers and state (the caller decides what that is, the same way
	// on sealing and opening).
	Params [32]byte
}

// Sealer seals with its current key and opens with any of its keys, so a
// key can be rotated while tokens sealed with the old one are in flight.
type Sealer struct {
	keys  []sealKey // current first
	now   func() time.Time
	nonce io.Reader // crypto/rand; a test's fixed bytes
}

type sealKey struct {
	id   [idLen]byte
	aead cipher.AEAD
}

// New returns a Sealer sealing with current and also opening with old
// (keys no longer used to seal). Each secret must hold at least
// MinKeyBytes. now is its clock.
func New(now func() time.Time, current []byte, old ...[]byte) (*Sealer, error) {
	s := &Sealer{now: now, nonce: rand.Reader}
	for i, secret := range append([][]byte{current}, old...) {
		if len(secret) < MinKeyBytes {
			return nil, fmt.Errorf("request state key %d: %d bytes, at least %d required", i, len(secret), MinKeyBytes)
		}
		k, err := newKey(secret)
		if err != nil {
			return nil, fmt.Errorf("request state key %d: %w", i, err)
		}
		s.keys = append(s.keys, k)
	}
	return s, nil
}

func newKey(secret []byte) (sealKey, error) {
	var k sealKey
	sum := sha256.Sum256(append([]byte("mcp-runtime requestState key id\x00"), secret...))
	copy(k.id[:], sum[:])
	key, err := hkdf.Key(sha256.New, secret, nil, infoAEAD, 32)
	if err != nil {
		return k, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return k, err
	}
	k.aead, err = cipher.NewGCM(block)
	return k, err
}

// Seal returns the token for payload, bound to b, valid for ttl.
func (s *Sealer) Seal(b Binding, payload []byte, ttl time.Duration) (string, error) {
	if len(payload) > MaxPayloadBytes {
		return "", fmt.Errorf("request state of %d bytes: at most %d fit in a token", len(payload), MaxPayloadBytes)
	}
	k := s.keys[0]
	head := make([]byte, idLen+expLen, idLen+expLen+k.aead.NonceSize()+len(payload)+k.aead.Overhead())
	copy(head, k.id[:])
	binary.BigEndian.PutUint64(head[idLen:], uint64(s.now().Add(ttl).UnixMilli()))
	nonce := make([]byte, k.aead.NonceSize())
	if _, err := io.ReadFull(s.nonce, nonce); err != nil {
		return "", fmt.Errorf("request state nonce: %w", err)
	}
	out := append(head, nonce...)
	out = k.aead.Seal(out, nonce, payload, additional(head, b))
	return prefix + base64.RawURLEncoding.EncodeToString(out), nil
}

// Open returns the payload of token if it was sealed by one of the keys,
// for b, and has not expired.
func (s *Sealer) Open(b Binding, token string) ([]byte, error) {
	if len(token) > MaxTokenBytes || !strings.HasPrefix(token, prefix) || !base64URL(token[len(prefix):]) {
		return nil, ErrMalformed
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(token[len(prefix):])
	if err != nil {
		return nil, ErrMalformed
	}
	var k *sealKey
	for i := range s.keys {
		if len(raw) >= idLen && string(raw[:idLen]) == string(s.keys[i].id[:]) {
			k = &s.keys[i]
			break
		}
	}
	if k == nil {
		return nil, ErrForeign // sealed with a key this deployment does not hold
	}
	ns := k.aead.NonceSize()
	if len(raw) < idLen+expLen+ns+k.aead.Overhead() {
		return nil, ErrMalformed
	}
	head, nonce, sealed := raw[:idLen+expLen], raw[idLen+expLen:idLen+expLen+ns], raw[idLen+expLen+ns:]
	payload, err := k.aead.Open(nil, nonce, sealed, additional(head, b))
	if err != nil {
		return nil, ErrForeign
	}
	// Checked after authentication: an expiry is trusted only once the
	// token is known to be ours.
	if exp := int64(binary.BigEndian.Uint64(head[idLen:])); s.now().UnixMilli() >= exp {
		return nil, ErrExpired
	}
	return payload, nil
}

// base64URL reports whether s holds only the base64url alphabet: the
// decoder skips CR and LF, so without this check many strings would open
// to one state, and anything keyed on the token's text (a store of spent
// tokens) could be passed by another spelling of it.
func base64URL(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// additional is the authenticated data: the token's head and the binding,
// each field length-prefixed so no two bindings encode alike.
func additional(head []byte, b Binding) []byte {
	ad := append([]byte(nil), head...)
	for _, f := range []string{b.Principal, b.Tenant, b.Method} {
		ad = binary.BigEndian.AppendUint32(ad, uint32(len(f)))
		ad = append(ad, f...)
	}
	return append(ad, b.Params[:]...)
}
