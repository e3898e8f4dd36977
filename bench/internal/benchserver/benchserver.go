// Package benchserver holds what the benchmark servers share: the -addr
// flag, serving one handler at /mcp without logging, and shutdown on signal.
package benchserver

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Path is where every benchmark server serves Streamable HTTP.
const Path = "/mcp"

// Main parses the command line, serves h at Path on -addr until SIGINT or
// SIGTERM, and exits the process. name prefixes error messages.
func Main(name string, h http.Handler) {
	fs := flag.NewFlagSet(name, flag.ExitOnError)
	addr := fs.String("addr", "", "listen address, e.g. 127.0.0.1:8080 (required)")
	_ = fs.Parse(os.Args[1:]) // ExitOnError: Parse exits on failure
	if *addr == "" || fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "usage: %s -addr HOST:PORT\n", name)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := Serve(ctx, *addr, h)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}

// Serve serves h at Path on addr until ctx is done, then shuts down
// gracefully. The server's own error log is discarded: benchmark servers do
// not log.
func Serve(ctx context.Context, addr string, h http.Handler) error {
	mux := http.NewServeMux()
	mux.Handle(Path, h)
	srv := &http.Server{
		Addr:              addr,
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	select {
	case err := <-errc:
		return fmt.Errorf("listen on %s: %w", addr, err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
