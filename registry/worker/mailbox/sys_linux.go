package mailbox

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// The Linux system interfaces the workers need: sealed memfds for staged
// payloads and the arena, and close-on-exec descriptors passed over the
// mailbox. Other systems build the package (so that `GOOS=darwin go vet`
// checks it) but cannot start workers (sys_other.go).

// RecvFlags are the flags of every recvmsg on a mailbox: descriptors
// received are close-on-exec.
const RecvFlags = unix.MSG_CMSG_CLOEXEC

// SockCloexec makes a mailbox socket close-on-exec when it is created.
const SockCloexec = unix.SOCK_CLOEXEC

// requiredSeals are the seals a staged payload must carry: its size and
// content can no longer change, so a child reads exactly what the parent
// hashed.
const requiredSeals = unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE

// memfdCreate returns a new close-on-exec memfd, sealable when sealable.
func memfdCreate(name string, sealable bool) (int, error) {
	flags := unix.MFD_CLOEXEC
	if sealable {
		flags |= unix.MFD_ALLOW_SEALING
	}
	return unix.MemfdCreate(name, flags)
}

// seal adds requiredSeals to fd, and the seal that forbids more seals.
func seal(fd int) error {
	_, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, requiredSeals|unix.F_SEAL_SEAL)
	return err
}

// checkSealed checks that fd carries requiredSeals.
func checkSealed(fd int) error {
	seals, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0)
	if err != nil {
		return fmt.Errorf("staged payload: %w", err)
	}
	if seals&requiredSeals != requiredSeals {
		return fmt.Errorf("staged payload is not sealed (seals %#x)", seals)
	}
	return nil
}
