package inspect

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/inventory"
	"github.com/ptojit/ptojit/jit"
)

// Show is the cache show --json document of the entry e of s: the entry
// with its key record and, for a build key's entry, its header variants.
func Show(ctx context.Context, s cache.Core, e *cache.Entry) EntryReport {
	j := EntryOf(e, true)
	if m := ManifestOf(ctx, s, e); m != nil {
		j.Variants = VariantsOf(ctx, s, m)
	}
	return j
}

// WriteShow writes the entry e of s as cache show prints it: its fields,
// its header variants or outputs, and its key record (as a tree, or with
// raw its wire bytes in hex).
func WriteShow(ctx context.Context, out io.Writer, s cache.Core, e *cache.Entry, raw bool) error {
	m := ManifestOf(ctx, s, e)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "key\t%s\n", e.Key)
	fmt.Fprintf(w, "kind\t%s\n", EntryKind(e))
	fmt.Fprintf(w, "size\t%s (%d bytes)\n", cache.FormatSize(e.Size()), e.Size())
	fmt.Fprintf(w, "created\t%s\n", FormatTime(e.Created))
	fmt.Fprintf(w, "last used\t%s\n", FormatTime(e.LastUsed))
	fmt.Fprintf(w, "compile time\t%s\n", e.CompileTime.Round(time.Millisecond))
	var meta []string
	for _, k := range slices.Sorted(maps.Keys(e.Meta)) {
		if k != "manifest" || m == nil { // a manifest is printed as the variants below
			meta = append(meta, k)
		}
	}
	if len(meta) > 0 {
		fmt.Fprintf(w, "meta\t\n")
		for _, k := range meta {
			fmt.Fprintf(w, "  %s\t%s\n", k, e.Meta[k])
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if m != nil {
		fmt.Fprintf(out, "variants (header sets seen for this key, most recent first; each result entry holds the outputs)\n")
		for i, v := range VariantsOf(ctx, s, m) {
			fmt.Fprintf(out, "  [%d] result %s, %d headers, %d searched and absent\n", i, v.Result, len(v.Headers), len(v.Absent))
			for _, a := range v.Absent {
				fmt.Fprintf(out, "      absent %s\n", a)
			}
			if v.Missing != "" {
				fmt.Fprintf(out, "      result entry unreadable: %s\n", v.Missing)
			}
			for _, o := range v.Outputs {
				fmt.Fprintf(out, "      %s %10d  sha256:%s  %s\n", o.Mode, o.Size, o.Digest, o.Name)
			}
		}
	} else {
		fmt.Fprintf(out, "outputs\n")
		for _, o := range e.Outputs {
			fmt.Fprintf(out, "  %04o %10d  sha256:%x  %s\n", o.Mode, o.Size, o.Digest, o.Name)
		}
	}
	return writeEntryRecord(out, e, raw)
}

// writeEntryRecord prints an entry's key record: the indented tree "ptojit
// key" prints, or with raw its wire bytes in hex (as a record that does
// not decode is printed too).
func writeEntryRecord(out io.Writer, e *cache.Entry, raw bool) error {
	if len(e.Record) == 0 {
		return nil
	}
	if !raw {
		rec, err := inventory.Decode(e.Record)
		if err == nil {
			var b strings.Builder
			if err := jit.WriteRecordTree(&b, rec); err == nil {
				_, err := fmt.Fprintf(out, "record\n%s", b.String())
				return err
			}
		}
	}
	_, err := fmt.Fprintf(out, "record (%d bytes, hex)\n  %x\n", len(e.Record), e.Record)
	return err
}
