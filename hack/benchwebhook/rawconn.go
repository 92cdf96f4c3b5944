package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// requestTimeout bounds one request: how long a wedged server holds a
// worker, not what the bench measures.
const requestTimeout = 30 * time.Second

// rawConn is one worker's keep-alive HTTP/1.1 connection to a system. The
// request goes out in one write and the answer is read on the worker's own
// goroutine: net/http's client hands every request to two goroutines of
// its connection, CPU the load generator would take from the servers it
// measures on the same cores.
type rawConn struct {
	addr, host, path string
	tlsConfig        *tls.Config
	conn             *tls.Conn
	r                *bufio.Reader
	stop             func() bool // unregisters the close on the context's end
	out              []byte      // the request being written
	body             []byte      // the answer's body, reused
}

// newRawConn prepares a connection to t's endpoint with the TLS settings
// of t's client (which trusts the system's CA); it dials on first use.
func newRawConn(t target) (*rawConn, error) {
	endpoint := t.endpoint()
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme != "https" {
		return nil, fmt.Errorf("%s: %q is not an https URL", t.name, endpoint)
	}
	tr, ok := t.client.Transport.(*http.Transport)
	if !ok || tr.TLSClientConfig == nil {
		return nil, fmt.Errorf("%s: the client has no TLS configuration", t.name)
	}
	cfg := tr.TLSClientConfig.Clone()
	if cfg.ServerName == "" {
		cfg.ServerName = u.Hostname()
	}
	cfg.NextProtos = []string{"http/1.1"}
	return &rawConn{addr: u.Host, host: u.Host, path: u.RequestURI(), tlsConfig: cfg}, nil
}

// post sends body as a JSON POST and returns the answer's status and body
// (valid until the next post). A failed exchange closes the connection;
// the next post dials again.
func (c *rawConn) post(ctx context.Context, body []byte) (int, []byte, error) {
	if c.conn == nil {
		if err := c.dial(ctx); err != nil {
			return 0, nil, err
		}
	}
	status, raw, err := c.exchange(body)
	if err != nil {
		c.close()
		if ctx.Err() != nil {
			return 0, nil, ctx.Err()
		}
	}
	return status, raw, err
}

func (c *rawConn) dial(ctx context.Context) error {
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}, Config: c.tlsConfig}
	conn, err := d.DialContext(ctx, "tcp", c.addr)
	if err != nil {
		return err
	}
	c.conn = conn.(*tls.Conn)
	c.r = bufio.NewReaderSize(c.conn, 16<<10)
	// The end of the run (or an interrupt) unblocks a worker waiting on
	// an answer.
	c.stop = context.AfterFunc(ctx, func() { _ = conn.Close() })
	return nil
}

func (c *rawConn) exchange(body []byte) (int, []byte, error) {
	if err := c.conn.SetDeadline(time.Now().Add(requestTimeout)); err != nil {
		return 0, nil, err
	}
	c.out = append(c.out[:0], "POST "...)
	c.out = append(c.out, c.path...)
	c.out = append(c.out, " HTTP/1.1\r\nHost: "...)
	c.out = append(c.out, c.host...)
	c.out = append(c.out, "\r\nContent-Type: application/json\r\nAccept: application/json\r\nContent-Length: "...)
	c.out = strconv.AppendInt(c.out, int64(len(body)), 10)
	c.out = append(c.out, "\r\n\r\n"...)
	c.out = append(c.out, body...)
	if _, err := c.conn.Write(c.out); err != nil {
		return 0, nil, err
	}
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	if resp.ContentLength > 0 && int(resp.ContentLength) <= 16<<20 {
		if cap(c.body) < int(resp.ContentLength) {
			c.body = make([]byte, resp.ContentLength)
		}
		c.body = c.body[:resp.ContentLength]
		if _, err := io.ReadFull(resp.Body, c.body); err != nil {
			return 0, nil, err
		}
	} else if c.body, err = io.ReadAll(resp.Body); err != nil {
		return 0, nil, err
	}
	if resp.Close {
		c.close()
	}
	return resp.StatusCode, c.body, nil
}

func (c *rawConn) close() {
	if c.conn == nil {
		return
	}
	c.stop()
	_ = c.conn.Close()
	c.conn, c.r = nil, nil
}

// isTimeout says whether err is a request that ran past requestTimeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}
