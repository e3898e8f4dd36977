package store

import (
	"encoding/base64"
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// Cursors are opaque to clients. Ours are the keyset position of the last
// item of a page — its sort key — encoded as base64url JSON with a kind
// tag, so that a cursor from one listing is rejected by another instead of
// silently paging the wrong thing.
type cursor struct {
	Kind string    `json:"k"`
	Time time.Time `json:"t,omitzero"`
	A    string    `json:"a,omitempty"`
	B    string    `json:"b,omitempty"`
}

// EncodeCursor returns the cursor of a keyset position in the listing
// kind: t, a and b are the sort key of the last item returned.
func EncodeCursor(kind string, t time.Time, a, b string) string {
	raw, _ := json.Marshal(cursor{Kind: kind, Time: t.UTC(), A: a, B: b})
	return base64.RawURLEncoding.EncodeToString(raw)
}

// DecodeCursor is the inverse of EncodeCursor; a cursor that this server
// did not issue for kind is a *FieldError on "cursor".
func DecodeCursor(kind, s string) (t time.Time, a, b string, err error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	var c cursor
	if err == nil {
		err = json.Unmarshal(raw, &c)
	}
	if err != nil || c.Kind != kind {
		return time.Time{}, "", "", Invalid("cursor", "is not a cursor this listing issued")
	}
	return c.Time, c.A, c.B, nil
}

// NewID returns a fresh identifier for sessions and traces: a UUIDv7, so
// ids sort by creation time and index well.
func NewID() string { return uuid.Must(uuid.NewV7()).String() }
