package upstream

import (
	"context"
	"net"
	"sync"
)

// clientFirstConn holds back what a server says before our first write.
// HTTP and TLS are protocols in which the client speaks first, but a
// server that speaks first (NATS, SMTP, SSH, MySQL: what a mistyped
// upstream URL reaches) sends its banner as soon as it accepts. net/http's
// read loop would then find bytes on a connection with no request in
// flight: it logs them to the process's standard logger ("Unsolicited
// response received on idle HTTP channel", the peer's bytes quoted) and
// drops the connection, and whether the request then fails as "not HTTP"
// or as a closed connection depends on which goroutine ran first. Bytes
// read before the first write are handed over only once it happened, so
// the banner is always the answer to our request and reaches no log. The
// read itself is not held back: a server closing a connection that was
// never used is noticed at once, as without the wrapper.
type clientFirstConn struct {
	net.Conn
	once    sync.Once
	written chan struct{}
}

func (c *clientFirstConn) Write(p []byte) (int, error) {
	c.once.Do(func() { close(c.written) })
	return c.Conn.Write(p)
}

func (c *clientFirstConn) Read(p []byte) (int, error) {
	select {
	case <-c.written:
		return c.Conn.Read(p)
	default:
	}
	n, err := c.Conn.Read(p)
	if n > 0 {
		<-c.written // the server spoke first: this is the answer to what we send
	}
	return n, err
}

// Close also releases a read holding bytes until the first write.
func (c *clientFirstConn) Close() error {
	c.once.Do(func() { close(c.written) })
	return c.Conn.Close()
}

// dialClientFirst wraps dial's connections in clientFirstConn.
func dialClientFirst(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &clientFirstConn{Conn: c, written: make(chan struct{})}, nil
	}
}
