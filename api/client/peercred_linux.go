package client

import (
	"net"
	"syscall"
)

// PeerUID returns the uid of the process at the other end of conn, from
// SO_PEERCRED.
func PeerUID(conn *net.UnixConn) (int, error) {
	c, err := peerCred(conn)
	if err != nil {
		return -1, err
	}
	return int(c.Uid), nil
}

// peerCred returns the SO_PEERCRED credentials of conn's peer.
func peerCred(conn *net.UnixConn) (*syscall.Ucred, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *syscall.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return nil, err
	}
	if credErr != nil {
		return nil, credErr
	}
	return cred, nil
}
