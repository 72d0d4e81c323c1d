package client

import (
	"net"

	"golang.org/x/sys/unix"
)

// PeerUID returns the uid of the process at the other end of conn, from
// LOCAL_PEERCRED.
func PeerUID(conn *net.UnixConn) (int, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return -1, err
	}
	var cred *unix.Xucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptXucred(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	}); err != nil {
		return -1, err
	}
	if credErr != nil {
		return -1, credErr
	}
	return int(cred.Uid), nil
}

// socketPeer returns the uid (LOCAL_PEERCRED) and pid (LOCAL_PEERPID) of
// the process at the other end of conn.
func socketPeer(conn *net.UnixConn) (uid, pid int, err error) {
	if uid, err = PeerUID(conn); err != nil {
		return -1, -1, err
	}
	if pid, err = socketPeerPID(conn); err != nil {
		return -1, -1, err
	}
	return uid, pid, nil
}

// socketPeerPID returns the pid of the process at the other end of conn,
// from LOCAL_PEERPID.
func socketPeerPID(conn *net.UnixConn) (int, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return -1, err
	}
	var pid int
	var pidErr error
	if err := raw.Control(func(fd uintptr) {
		pid, pidErr = unix.GetsockoptInt(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERPID)
	}); err != nil {
		return -1, err
	}
	if pidErr != nil {
		return -1, pidErr
	}
	return pid, nil
}
