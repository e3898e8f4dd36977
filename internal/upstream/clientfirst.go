package upstream

import (
	"context"
	"net"
	"sync"
)

// clientFirstConn holds back reads until the first write. HTTP and TLS
// are protocols in which the client speaks first, but a server that
// speaks first (NATS, SMTP, SSH, MySQL: what a mistyped upstream URL
// reaches) sends its banner as soon as it accepts. net/http's read loop
// would then find bytes on a connection with no request in flight: it
// logs them to the process's standard logger ("Unsolicited response
// received on idle HTTP channel", the peer's bytes quoted) and drops the
// connection, and whether the request then fails as "not HTTP" or as a
// closed connection depends on which goroutine ran first. Waiting for
// the first write makes the banner the answer to our request, always,
// and keeps it out of every log.
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
	<-c.written
	return c.Conn.Read(p)
}

// Close also releases a read still waiting for the first write.
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
