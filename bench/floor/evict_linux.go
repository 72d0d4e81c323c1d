package main

import (
	"bufio"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// evict drops the page cache of the files listed on stdin, one path a
// line (posix_fadvise POSIX_FADV_DONTNEED), so that the next read of them
// comes from the disk. Only those files' pages go: unlike drop_caches it
// leaves the rest of the machine's cache (and the dentries and inodes)
// alone.
func evict() {
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		fd, err := unix.Open(sc.Text(), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			fatal(fmt.Errorf("evict: %w", err))
		}
		if err := unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED); err != nil {
			fatal(fmt.Errorf("evict %s: %w", sc.Text(), err))
		}
		unix.Close(fd)
	}
	if err := sc.Err(); err != nil {
		fatal(err)
	}
}
