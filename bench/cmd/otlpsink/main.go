// Command otlpsink is the OpenTelemetry collector of the benchmarks: it
// takes OTLP over HTTP (POST /v1/traces, /v1/metrics), reads each export
// whole and answers 200 with an empty response, decoding nothing, so that
// what a traced server pays for exporting is measured, and not a
// collector's work on the same cores. It counts the bytes it took and
// prints them when it ends (SIGTERM).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:4318", "address to serve on")
	flag.Parse()
	var exports, bytes atomic.Int64
	srv := &http.Server{Addr: *addr, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST an OTLP export", http.StatusMethodNotAllowed)
			return
		}
		n, _ := io.Copy(io.Discard, r.Body)
		exports.Add(1)
		bytes.Add(n)
		w.Header().Set("Content-Type", "application/x-protobuf")
	})}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		_ = srv.Shutdown(context.Background())
	}()
	if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("%d exports, %d bytes\n", exports.Load(), bytes.Load())
}
