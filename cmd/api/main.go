// Command api runs the mcp-runtime MCP server.
//
// It reads its configuration (internal/config), builds the handlers and the
// Streamable HTTP transport, serves them on one http.Server, and shuts down
// gracefully on SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/mcp-runtime/mcp-runtime/internal/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "mcp-runtime:", err)
		os.Exit(1)
	}
}

// run is main without process globals, so tests can start and stop servers.
func run(ctx context.Context, args []string, getenv func(string) string, logOut io.Writer) error {
	cfg, err := config.Load(args, getenv)
	if err != nil {
		return err
	}
	app, err := newApp(ctx, cfg, logOut, getenv)
	if err != nil {
		return err
	}
	return app.serve(ctx)
}
