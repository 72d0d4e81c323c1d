package cache

import (
	"encoding/binary"
	"syscall"
)

// privateDefaultACL gives dir a default POSIX ACL that grants the owner
// read and write and nobody else anything: a file created in dir later
// (Badger's tables, created 0666 less the umask at any time, by its
// flushes and compactions) then starts 0600 whatever the umask, instead
// of being readable by others until tightenFiles runs. A file system
// without ACLs keeps tightenFiles alone; that is not an error.
func privateDefaultACL(dir string) {
	// The xattr value (linux/posix_acl_xattr.h): a version, then entries
	// of a tag, permissions and an id, sorted by tag.
	const (
		version   = 2
		userObj   = 0x01
		groupObj  = 0x04
		other     = 0x20
		undefined = 0xffffffff
		readWrite = 6
	)
	b := binary.LittleEndian.AppendUint32(nil, version)
	for _, e := range []struct{ tag, perm uint16 }{{userObj, readWrite}, {groupObj, 0}, {other, 0}} {
		b = binary.LittleEndian.AppendUint16(b, e.tag)
		b = binary.LittleEndian.AppendUint16(b, e.perm)
		b = binary.LittleEndian.AppendUint32(b, undefined)
	}
	syscall.Setxattr(dir, "system.posix_acl_default", b, 0)
}
