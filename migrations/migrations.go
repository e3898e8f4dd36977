// Package migrations holds the PostgreSQL schema of mcp-runtime as goose
// SQL migrations. They are embedded so the server binary carries its own
// schema and applies it at start-up (pgstore.Migrate); there is no
// separate migration step to forget in a deployment.
package migrations

import "embed"

// FS holds the migrations, named NNNNN_description.sql in the order goose
// applies them.
//
//go:embed *.sql
var FS embed.FS
