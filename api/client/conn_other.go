//go:build !linux

package client

import "net"

// dial connects to the daemon socket at path.
func dial(path string) (daemonConn, error) {
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	return unixConn{c}, nil
}

// unixConn is a daemonConn of package net.
type unixConn struct{ *net.UnixConn }

func (c unixConn) peer() (uid, pid int, err error) { return socketPeer(c.UnixConn) }
