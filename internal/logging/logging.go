// Package logging builds the process logger: zerolog, JSON lines by default,
// written so that logging never slows a request down. Lines go through a
// non-blocking diode (a full buffer drops lines and says how many, rather
// than stalling callers) into a buffer that reaches the output in one write
// per flush interval, instead of one write system call per line.
package logging

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/rs/zerolog/diode"
)

// Options configure New.
type Options struct {
	Level  string // trace, debug, info, warn, error
	Format string // json or console
	// FlushInterval bounds how long a line may wait before it is written;
	// zero means 100ms.
	FlushInterval time.Duration
}

// New returns a logger writing to out and a Closer that flushes every
// pending line and stops the background writer.
func New(out io.Writer, opts Options) (zerolog.Logger, io.Closer, error) {
	level, err := zerolog.ParseLevel(opts.Level)
	if err != nil {
		return zerolog.Logger{}, nil, fmt.Errorf("log level %q: %w", opts.Level, err)
	}
	if opts.Format == "console" {
		// For a person at a terminal: synchronous and readable. Colour
		// codes only for a terminal: in a file or a pipe they are noise.
		w := zerolog.ConsoleWriter{Out: out, NoColor: !isTerminal(out)}
		return zerolog.New(w).Level(level).With().Timestamp().Logger(), io.NopCloser(nil), nil
	}
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = 100 * time.Millisecond
	}
	b := newBatcher(out, opts.FlushInterval)
	d := diode.NewWriter(b, 16384, 5*time.Millisecond, func(missed int) {
		fmt.Fprintf(b, `{"level":"warn","message":"log buffer full: %d lines dropped"}`+"\n", missed)
	})
	return zerolog.New(d).Level(level).With().Timestamp().Logger(), closers{d, b}, nil
}

// isTerminal reports whether out is a terminal: a file that is a
// character device. Any other writer (a buffer, a pipe, a regular file)
// is not.
func isTerminal(out io.Writer) bool {
	f, ok := out.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

type closers []io.Closer

// Close closes in order: the diode first (it drains into the batcher),
// then the batcher (it flushes to the output).
func (cs closers) Close() error {
	var first error
	for _, c := range cs {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// batcher buffers writes and flushes them on an interval and on Close.
type batcher struct {
	out  io.Writer
	mu   sync.Mutex
	buf  *bufio.Writer
	stop chan struct{}
	done chan struct{}
}

func newBatcher(out io.Writer, every time.Duration) *batcher {
	b := &batcher{out: out, buf: bufio.NewWriterSize(out, 64<<10), stop: make(chan struct{}), done: make(chan struct{})}
	go b.flushLoop(every)
	return b
}

func (b *batcher) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.buf.Write(p)
	if err != nil {
		b.recover()
	}
	return n, err
}

// recover drops what is buffered after a failed write. bufio.Writer keeps
// its first error forever; without this, one failed write (a full disk, a
// closed pipe) would silence the log for the rest of the process.
func (b *batcher) recover() { b.buf.Reset(b.out) }

func (b *batcher) flushLoop(every time.Duration) {
	defer close(b.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			b.flush()
		case <-b.stop:
			b.flush()
			return
		}
	}
}

func (b *batcher) flush() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.buf.Flush(); err != nil {
		b.recover() // nowhere to report a failing log sink but the sink
	}
}

func (b *batcher) Close() error {
	select {
	case <-b.stop:
	default:
		close(b.stop)
	}
	<-b.done
	return nil
}
