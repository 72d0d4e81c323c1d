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
	"hash"
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
				sizes[i] = hashFile(paths[i], buf, h, &sums[i])
			}
		})
	}
	for i := range paths {
		next <- i
	}
	close(next)
	wg.Wait()
	printDigest(sums, sizes)
}

// hashFile sets sum to the SHA-256 of the file at p and returns its size:
// open, read to EOF, close.
func hashFile(p string, buf []byte, h hash.Hash, sum *[32]byte) int64 {
	fd, err := syscall.Open(p, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		fatal(fmt.Errorf("open %s: %w", p, err))
	}
	h.Reset()
	var size int64
	for {
		n, err := syscall.Read(fd, buf)
		if err != nil {
			fatal(fmt.Errorf("read %s: %w", p, err))
		}
		if n == 0 {
			break
		}
		h.Write(buf[:n])
		size += int64(n)
	}
	syscall.Close(fd)
	h.Sum(sum[:0])
	return size
}

// printDigest prints the number of files, their bytes and a digest of
// their digests, so the work cannot be skipped.
func printDigest(sums [][32]byte, sizes []int64) {
	all := sha256.New()
	var total int64
	for i := range sums {
		all.Write(sums[i][:])
		total += sizes[i]
	}
	fmt.Printf("%d files %d bytes %x\n", len(sums), total, all.Sum(nil))
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "floor:", err)
	os.Exit(1)
}
