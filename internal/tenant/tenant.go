// Package tenant carries the tenant of a request in its context. Every
// store call, cache key and trace is scoped by it (DESIGN.md, Storage).
// Until authentication lands the tenant is always Default; the auth
// middleware will set it from the principal.
package tenant

import "context"

// Default is the tenant of every request while auth is off.
const Default = "default"

type key struct{}

// With returns ctx carrying tenant id.
func With(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, key{}, id)
}

// From returns the tenant of ctx, Default when none was set.
func From(ctx context.Context) string {
	if id, ok := ctx.Value(key{}).(string); ok && id != "" {
		return id
	}
	return Default
}
