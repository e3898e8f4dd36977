package pgtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestWithDatabase(t *testing.T) {
	for _, c := range []struct{ admin, want string }{
		{"postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "postgres://postgres@127.0.0.1:5432/x?sslmode=disable"},
		{"postgres://u:p@h/", "postgres://u:p@h/x"},
		{"host=h user=u", "host=h user=u dbname=x"},
	} {
		got, err := withDatabase(c.admin, "x")
		if err != nil || got != c.want {
			t.Errorf("withDatabase(%q) = %q, %v; want %q", c.admin, got, err, c.want)
		}
	}
}

func TestNewDatabaseIsUsableAndDropped(t *testing.T) {
	var name string
	t.Run("use", func(t *testing.T) {
		dbURL := NewDatabase(t)
		conn, err := pgx.Connect(t.Context(), dbURL)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		if err := conn.QueryRow(t.Context(), `SELECT current_database()`).Scan(&name); err != nil {
			t.Fatal(err)
		}
	})
	admin, err := pgx.Connect(t.Context(), AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	var exists bool
	if err := admin.QueryRow(t.Context(), `SELECT EXISTS (SELECT FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if name == "" || exists {
		t.Fatalf("database %q still exists after its test ended", name)
	}
}
