//go:build !linux

package client

import (
	"net"
	"time"
)

// dial connects to the daemon socket at path, waiting at most bound.
func dial(path string, bound time.Duration) (daemonConn, error) {
	d := net.Dialer{Timeout: bound}
	c, err := d.Dial("unix", path)
	if err != nil {
		return nil, err
	}
	return unixConn{c.(*net.UnixConn)}, nil // what a "unix" dial returns
}

// unixConn is a daemonConn of package net.
type unixConn struct{ *net.UnixConn }

func (c unixConn) peer() (uid, pid int, err error) { return socketPeer(c.UnixConn) }
