package migrations

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/pressly/goose/v3"
)

// Every migration must be one goose can order and roll back; the
// database tests (internal/store/pgstore) apply them.
func TestMigrationsAreWellFormed(t *testing.T) {
	names, err := fs.Glob(FS, "*.sql")
	if err != nil || len(names) == 0 {
		t.Fatalf("no migrations embedded (%v)", err)
	}
	for i, name := range names {
		v, err := goose.NumericComponent(name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if v != int64(i+1) {
			t.Errorf("%s: version %d, want %d (versions run 1, 2, 3 … without gaps)", name, v, i+1)
		}
		body, err := fs.ReadFile(FS, name)
		if err != nil {
			t.Fatal(err)
		}
		up := strings.Index(string(body), "-- +goose Up")
		down := strings.Index(string(body), "-- +goose Down")
		if up < 0 || down < up {
			t.Errorf("%s: want a -- +goose Up section followed by a -- +goose Down section", name)
		}
	}
}
