// Command cmdtime times whole commands side by side: it runs each of them
// in turn, round after round, so that every command sees the same machine
// load, and prints the median, p90 and minimum wall time of each and each
// median's ratio to the last command's (the baseline).
//
//	cmdtime -n 200 -- 'ptojit build --request r.json' -- 'ccache gcc -c k.c'
//
// Commands are split on spaces (no shell); their output is discarded and a
// failing run stops the measurement.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

func main() {
	n := flag.Int("n", 100, "rounds")
	warm := flag.Int("warm", 3, "untimed rounds first")
	flag.Parse()
	var cmds [][]string
	for _, a := range flag.Args() {
		if a == "--" {
			continue
		}
		cmds = append(cmds, strings.Fields(a))
	}
	if len(cmds) == 0 {
		fmt.Fprintln(os.Stderr, "usage: cmdtime [-n N] -- 'CMD ARGS' [-- 'CMD ARGS']...")
		os.Exit(2)
	}
	times := make([][]time.Duration, len(cmds))
	for round := -*warm; round < *n; round++ {
		for i, c := range cmds {
			cmd := exec.Command(c[0], c[1:]...)
			cmd.WaitDelay = 5 * time.Second
			t := time.Now()
			out, err := cmd.CombinedOutput()
			d := time.Since(t)
			if err != nil {
				fmt.Fprintf(os.Stderr, "%s: %v\n%s", strings.Join(c, " "), err, out)
				os.Exit(1)
			}
			if round >= 0 {
				times[i] = append(times[i], d)
			}
		}
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }
	base := median(times[len(times)-1])
	fmt.Printf("%-60s %10s %10s %10s %8s\n", "command ("+fmt.Sprint(*n)+" runs each, interleaved)", "median", "p90", "min", "ratio")
	for i, c := range cmds {
		ts := times[i]
		slices.Sort(ts)
		name := strings.Join(c, " ")
		if len(name) > 60 {
			name = "..." + name[len(name)-57:]
		}
		fmt.Printf("%-60s %10s %10s %10s %7.2fx\n", name, ms(median(ts)), ms(ts[len(ts)*9/10]), ms(ts[0]), float64(median(ts))/float64(base))
	}
}

func median(ts []time.Duration) time.Duration {
	s := slices.Clone(ts)
	slices.Sort(s)
	return s[len(s)/2]
}
