// Command conformance is the fixture server for the official MCP
// conformance suite (@modelcontextprotocol/conformance). It is built from
// the project's own transport and handlers and registers the test tools,
// resources and prompts the suite's scenarios call by name
// (../shared/notes/mcp-protocol-and-conformance.md, section 2). It is
// test-only: none of these fixtures belong in the product.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/rs/zerolog"

	"github.com/mcp-runtime/mcp-runtime/internal/handlers"
	"github.com/mcp-runtime/mcp-runtime/internal/transport"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:3001", "listen address")
	verbose := flag.Bool("v", false, "log every request")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, *addr, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "conformance server:", err)
		os.Exit(1)
	}
}

func serve(ctx context.Context, addr string, verbose bool) error {
	level := zerolog.WarnLevel
	if verbose {
		level = zerolog.InfoLevel
	}
	log := zerolog.New(os.Stderr).Level(level).With().Timestamp().Logger()
	h, tr, err := newHandler(log)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	fmt.Fprintf(os.Stderr, "conformance fixture server on http://%s/mcp\n", ln.Addr())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tr.CloseStreams(0)
	err = hs.Shutdown(shut)
	return errors.Join(err, tr.Close(shut))
}

// newHandler builds the fixture server's router; tests use it directly.
func newHandler(log zerolog.Logger) (http.Handler, *transport.Transport, error) {
	tools, err := handlers.NewToolRegistry("_")
	if err != nil {
		return nil, nil, err
	}
	srv := handlers.NewServer(handlers.Options{Name: "mcp-runtime-conformance", Version: "test", PromptsChange: true}, tools)
	tr, err := transport.New(srv, transport.Options{
		LoopbackOnly:       true,
		MaxBodyBytes:       4 << 20,
		SessionIdleTimeout: 10 * time.Minute,
		KeepAliveInterval:  15 * time.Second,
		EventLogSize:       1024,
		MaxSessions:        1000,
		Logger:             log,
	})
	if err != nil {
		return nil, nil, err
	}
	if err := registerTools(tools); err != nil {
		return nil, nil, err
	}
	if err := registerResources(srv, tr); err != nil {
		return nil, nil, err
	}
	if err := registerPrompts(srv); err != nil {
		return nil, nil, err
	}
	if err := registerTriggers(srv, tools, tr); err != nil {
		return nil, nil, err
	}
	if err := registerMRTR(srv, tools); err != nil {
		return nil, nil, err
	}
	r := chi.NewRouter()
	tr.Mount(r, "/mcp")
	return r, tr, nil
}
