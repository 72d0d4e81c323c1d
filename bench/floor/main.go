// Command floor is the baseline of bench/fingerprint.sh: the least work
// that hashes a list of files, to compare ptojit fingerprint with. It reads
// newline-separated paths from stdin and hashes them with a fixed pool of
// goroutines, each doing raw open, read (1 MiB chunks, to EOF), SHA-256 and
// close; no stat, no walk, no checks, no records. It prints the number of
// files and bytes and a digest of the per-file digests, so the work cannot
// be skipped.
//
//	floor [-j N] < LIST
//	floor gen-tree DIR FILES BYTES   make a tree like a runtime installation
//	floor gen-file PATH BYTES        make one file of pseudo-random bytes
//	floor evict < LIST               drop the page cache of the listed files
//	floor walk ROOT                  the same loop over the files found by
//	                                 listing the directories below ROOT
package main

import (
	"bufio"
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"runtime"
	"sync"
	"syscall"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "gen-tree":
			genTree(os.Args[2:])
			return
		case "gen-file":
			genFile(os.Args[2:])
			return
		case "evict":
			evict()
			return
		case "walk":
			walkFloor(os.Args[2:])
			return
		}
	}
	workers := flag.Int("j", runtime.GOMAXPROCS(0), "goroutines hashing files")
	flag.Parse()

	var paths []string
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		paths = append(paths, sc.Text())
	}
	if err := sc.Err(); err != nil {
		fatal(err)
	}

	sums := make([][32]byte, len(paths))
	sizes := make([]int64, len(paths))
	next := make(chan int, 64)
	var wg sync.WaitGroup
	for range *workers {
		wg.Go(func() {
			buf := make([]byte, 1<<20)
			h := sha256.New()
			for i := range next {
				fd, err := syscall.Open(paths[i], syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
				if err != nil {
					fatal(fmt.Errorf("open %s: %w", paths[i], err))
				}
				h.Reset()
				for {
					n, err := syscall.Read(fd, buf)
					if err != nil {
						fatal(fmt.Errorf("read %s: %w", paths[i], err))
					}
					if n == 0 {
						break
					}
					h.Write(buf[:n])
					sizes[i] += int64(n)
				}
				syscall.Close(fd)
				h.Sum(sums[i][:0])
			}
		})
	}
	for i := range paths {
		next <- i
	}
	close(next)
	wg.Wait()

	all := sha256.New()
	var total int64
	for i := range sums {
		all.Write(sums[i][:])
		total += sizes[i]
	}
	fmt.Printf("%d files %d bytes %x\n", len(paths), total, all.Sum(nil))
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "floor:", err)
	os.Exit(1)
}
