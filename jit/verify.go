package jit

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
)

// verifyMayDiffer names the outputs whose bytes may differ between two
// compiles of the same inputs, with the reason. None may today: every
// output of the sim pipeline is reproducible (no timestamps; no absolute
// path under the base directory; the linker's build id, where there is
// one, hashes the contents). An output named here is
// still compared; a difference is a warning instead of an error. An output
// not named here is never exempt.
var verifyMayDiffer = map[string]string{}

// VerifyError is a hit whose stored outputs differ from those of a fresh
// compile of the same request (Options.Verify): the key misses an input
// that changes these outputs, or the compile is not reproducible. The
// stored entry is kept as it was and nothing is published.
type VerifyError struct {
	Key   string // the build's key, 64 hex digits
	Tier  string // where the hit came from: TierLocal or TierRemote
	Diffs []OutputDiff
}

// OutputDiff is one output whose stored bytes differ from the fresh ones.
// A digest is "sha256:" and 64 hex digits, or "none" for an output one
// side lacks.
type OutputDiff struct {
	Name   string
	Stored string
	Fresh  string
}

func (e *VerifyError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "verify: the %s hit of key %s differs from a fresh compile of the request:", e.Tier, e.Key)
	for _, d := range e.Diffs {
		fmt.Fprintf(&b, " %s stored %s, fresh %s;", d.Name, d.Stored, d.Fresh)
	}
	b.WriteString(" the key misses an input that changes these outputs (the stored entry is kept, the fresh outputs are not published)")
	return b.String()
}

// verifyHit compiles req afresh and compares every output of the hit r
// (its bytes stored) with the fresh ones, byte for byte (Options.Verify). A difference is a
// *VerifyError, counted as cache.EventVerifyMismatch, unless the inputs
// changed while the fresh compile ran (a source fingerprinted again as
// publish does, a header modified since the build began): the comparison
// proves nothing then and is a warning. The fresh outputs are never
// published; the build answers with the stored ones.
func (d *Driver) verifyHit(ctx context.Context, req *api.Request, id *identity, r *flightResult, began time.Time, resp *api.Response, ph *phases) error {
	t := time.Now()
	res, err := d.compile(ctx, req, id)
	if err != nil {
		return fmt.Errorf("verify: the fresh compile of the hit of key %s: %w", id.key, err)
	}
	defer res.release()
	outs, _, release, err := pack(req, res, d.tempDir())
	if err != nil {
		return fmt.Errorf("verify: the fresh compile of the hit of key %s: %w", id.key, err)
	}
	release()
	resp.Timings.Compile += ms(time.Since(t))
	ph.mark("verify_compile")
	diffs, notes := compareOutputs(r.outs, outs)
	resp.Warnings = append(resp.Warnings, notes...)
	if len(diffs) == 0 {
		return nil
	}
	why := d.revalidate(id)
	if why == "" {
		if _, err := hashHeaders(res.headers, began); err != nil {
			why = err.Error()
		}
	}
	if why != "" {
		resp.Warnings = append(resp.Warnings, fmt.Sprintf("verify: the hit of key %s was not checked: the inputs changed while it was compiled again (%s)",
			id.key, strings.TrimPrefix(why, "not published: ")))
		return nil
	}
	_ = cache.Count(ctx, d.opt.Store, cache.EventVerifyMismatch, "")
	return &VerifyError{Key: id.key.String(), Tier: r.tier, Diffs: diffs}
}

// compareOutputs compares the stored outputs with the fresh ones by name,
// by size and SHA-256 (the stored bytes were read and verified against
// theirs). It returns the differences and, for the outputs
// verifyMayDiffer names, warnings instead.
func compareOutputs(stored []cache.Output, fresh []cache.Output) (diffs []OutputDiff, notes []string) {
	freshByName := make(map[string]int, len(fresh))
	for i, o := range fresh {
		freshByName[o.Name] = i
	}
	add := func(name, s, f string) {
		if why, ok := verifyMayDiffer[name]; ok {
			notes = append(notes, fmt.Sprintf("verify: %s differs from a fresh compile (stored %s, fresh %s), as it may: %s", name, s, f, why))
			return
		}
		diffs = append(diffs, OutputDiff{Name: name, Stored: s, Fresh: f})
	}
	seen := make(map[string]bool, len(stored))
	for _, o := range stored {
		seen[o.Name] = true
		j, ok := freshByName[o.Name]
		switch {
		case !ok:
			add(o.Name, digestString(o.Digest), "none")
		case o.Size != fresh[j].Size || o.Digest != fresh[j].Digest:
			add(o.Name, digestString(o.Digest), digestString(fresh[j].Digest))
		}
	}
	for _, o := range fresh {
		if !seen[o.Name] {
			add(o.Name, "none", digestString(o.Digest))
		}
	}
	return diffs, notes
}

func digestString(d cache.Digest) string { return "sha256:" + hex.EncodeToString(d[:]) }
