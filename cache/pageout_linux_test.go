package cache

import "testing"

func TestParseMapsLine(t *testing.T) {
	for _, c := range []struct {
		line       string
		start, end uint64
		path       string
		ok         bool
	}{
		{"7f00a000-7f00b000 r--s 00000000 08:01 1234                       /var/cache/ptojit/000001.vlog\n", 0x7f00a000, 0x7f00b000, "/var/cache/ptojit/000001.vlog", true},
		{"7f00a000-7f00b000 r--s 00000000 08:01 1234   /home/a user/my cache/000002.vlog\n", 0x7f00a000, 0x7f00b000, "/home/a user/my cache/000002.vlog", true},
		{"7ffd1000-7ffd2000 rw-p 00000000 00:00 0 \n", 0x7ffd1000, 0x7ffd2000, "", true},
		{"7ffd1000-7ffd2000 rw-p 00000000 00:00 0\n", 0x7ffd1000, 0x7ffd2000, "", true},
		{"7f00a000-7f00b000 r--s 00000000 08:01 1234   /srv/c/000003.vlog (deleted)\n", 0x7f00a000, 0x7f00b000, "/srv/c/000003.vlog", true},
		{"7ffd2000-7ffd1000 rw-p 00000000 00:00 0 x\n", 0, 0, "", false},
		{"zz-7ffd2000 rw-p 00000000 00:00 0 x\n", 0, 0, "", false},
		{"7ffd1000-7ffd2000 rw-p\n", 0, 0, "", false},
	} {
		start, end, path, ok := parseMapsLine([]byte(c.line))
		if ok != c.ok || start != c.start || end != c.end || path != c.path {
			t.Errorf("%q: got %x %x %q %v, want %x %x %q %v", c.line, start, end, path, ok, c.start, c.end, c.path, c.ok)
		}
	}
}
