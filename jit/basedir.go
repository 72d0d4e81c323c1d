package jit

import (
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/inventory"
	"github.com/ptojit/ptojit/toolchain"
)

// BaseDirVariable names the base directory when the request names none:
// paths under it enter the build key relative to it.
const BaseDirVariable = "PTOJIT_BASE_DIR"

// baseDir writes paths under a base directory relative to it, as ccache's
// base_dir does, so that two checkouts of a project at different paths
// compute the same key. The zero baseDir keeps every path absolute.
type baseDir struct {
	dir string // cleaned absolute path; "" for none
	// resolved is dir with its symlinks resolved (the form of the
	// resolved paths of content records); "" when equal to dir.
	resolved string
}

// baseOf returns the base directory of req: its base_dir, else an
// absolute PTOJIT_BASE_DIR, else none.
func baseOf(req *api.Request, getenv func(string) string) baseDir {
	dir := req.BaseDir
	if dir == "" {
		dir = getenv(BaseDirVariable)
	}
	if dir == "" || !filepath.IsAbs(dir) {
		return baseDir{}
	}
	dir = filepath.Clean(dir)
	if dir == string(filepath.Separator) {
		return baseDir{} // everything would be relative: no base at all
	}
	b := baseDir{dir: dir}
	if r, err := filepath.EvalSymlinks(dir); err == nil && r != dir {
		b.resolved = r
	}
	return b
}

// under returns the path of p relative to prefix, and whether p is prefix
// or lies below it.
func under(p, prefix string) (string, bool) {
	if prefix == "" {
		return "", false
	}
	if p == prefix {
		return ".", true
	}
	if len(p) > len(prefix)+1 && p[len(prefix)] == '/' && strings.HasPrefix(p, prefix) {
		return p[len(prefix)+1:], true // no prefix+"/" built: a hit asks for every header
	}
	return "", false
}

// rel returns p relative to the base directory when p lies under it (in
// its own or its resolved form), else p unchanged.
func (b baseDir) rel(p string) string {
	if r, ok := under(p, b.dir); ok {
		return r
	}
	if r, ok := under(p, b.resolved); ok {
		return r
	}
	return p
}

// abs is the inverse of rel: a relative path is joined to the base
// directory.
func (b baseDir) abs(p string) string {
	if b.dir == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(b.dir, p)
}

// relStr is rel of a path in its record form (file names that are not
// UTF-8 are surrogate-escaped alike in the path and the base, so a prefix
// of the one is a prefix of the other).
func (b baseDir) relStr(s inventory.Str) inventory.Str {
	if b.dir == "" {
		return s
	}
	p := string(s)
	if r, ok := under(p, string(inventory.StrFromOSBytes(b.dir))); ok {
		return inventory.Str(r)
	}
	if b.resolved != "" {
		if r, ok := under(p, string(inventory.StrFromOSBytes(b.resolved))); ok {
			return inventory.Str(r)
		}
	}
	return s
}

// relRoots returns the root records of a content fingerprint with every
// path under the base directory relative to it: the root's path and each
// entry's resolved path. Records of any other shape are kept as they are.
func (b baseDir) relRoots(roots inventory.List) inventory.List {
	if b.dir == "" {
		return roots
	}
	return inventory.RelocateRoots(roots, b.relStr)
}

// contentDigest is the digest of ("content", roots) with the roots in the
// relative form.
func (b baseDir) contentDigest(roots inventory.List) inventory.Sum {
	return inventory.MustDigest(inventory.T(inventory.Str("content"), b.relRoots(roots)))
}

// extraSourcesDigest is inventory.FingerprintExtraSources with the content
// in the relative form: digest(("extra_sources", content, extra)), its
// walk bounded by budget (see sourceBudget).
func (b baseDir) extraSourcesDigest(paths []string, extra inventory.Value, budget *inventory.Budget) (inventory.Sum, error) {
	if b.dir == "" || len(paths) == 0 {
		return inventory.FingerprintExtraSourcesWith(paths, extra, budget)
	}
	roots := make([]inventory.ContentRoot, 0, len(paths))
	for _, p := range paths {
		r, err := inventory.NewContentRoot(p, true)
		if err != nil {
			return inventory.Sum{}, err
		}
		roots = append(roots, r)
	}
	c, err := inventory.FingerprintWith(roots, inventory.FingerprintOptions{Budget: budget})
	if err != nil {
		return inventory.Sum{}, err
	}
	if extra == nil {
		extra = inventory.None{}
	}
	return inventory.Digest(inventory.T(inventory.Str("extra_sources"), inventory.Str(b.contentDigest(c.Roots).String()), extra))
}

// componentMemo remembers componentDigest's answers: re-encoding the
// content records of an installation (thousands of files for a compiler)
// costs milliseconds, and a component's digest covers its content records
// or its build record (and the epoch), so the digest and the base
// directory determine the answer.
var componentMemo struct {
	mu sync.Mutex
	m  map[componentMemoKey]relComponent
}

type componentMemoKey struct {
	name           string
	digest         inventory.Sum
	base, resolved string
}

// relComponent is a component's digest in the relative form and the
// paths made relative in it.
type relComponent struct {
	digest   inventory.Sum
	relative []string
}

const maxComponentMemo = 4096

// componentDigest is the component's digest with the paths under the
// base directory relative to it, in its content evidence (content policy)
// or its build record (build policy, under in's epoch), and those paths,
// relative; components without either keep their digest.
func (b baseDir) componentDigest(c toolchain.ComponentIdentity, in *toolchain.ToolchainInputs) relComponent {
	if b.dir == "" || c.Digest.IsZero() || c.Evidence == nil {
		return relComponent{digest: c.Digest}
	}
	k := componentMemoKey{c.Name, c.Digest, b.dir, b.resolved}
	componentMemo.mu.Lock()
	rc, ok := componentMemo.m[k]
	componentMemo.mu.Unlock()
	if ok {
		return rc
	}
	rc = b.relComponent(c, in)
	componentMemo.mu.Lock()
	if componentMemo.m == nil || len(componentMemo.m) >= maxComponentMemo {
		componentMemo.m = map[componentMemoKey]relComponent{}
	}
	componentMemo.m[k] = rc
	componentMemo.mu.Unlock()
	return rc
}

// relComponent computes componentDigest.
func (b baseDir) relComponent(c toolchain.ComponentIdentity, in *toolchain.ToolchainInputs) relComponent {
	if in != nil {
		if sum, rel, ok := c.RelocatedBuildDigest(in.Epoch, in.EpochSet, b.relStr); ok {
			return relComponent{sum, rel}
		}
	}
	if _, ok := c.Evidence["content"]; !ok || c.ContentRoots == nil {
		return relComponent{digest: c.Digest}
	}
	ev := make(inventory.Dict, len(c.Evidence))
	for k, v := range c.Evidence {
		ev[k] = v
	}
	ev["content"] = inventory.Str(b.contentDigest(c.ContentRoots).String())
	sum, err := toolchain.ComponentDigest(c.Name, ev)
	if err != nil {
		return relComponent{digest: c.Digest}
	}
	return relComponent{sum, b.relRootPaths(c.ContentRoots)}
}

// relRootPaths lists, relative, the paths of the content roots that lie
// under the base directory.
func (b baseDir) relRootPaths(roots inventory.List) []string {
	var out []string
	for _, r := range roots {
		if t, ok := r.(inventory.Tuple); ok && len(t) > 0 {
			if p, ok := t[0].(inventory.Str); ok {
				if q := b.relStr(p); q != p {
					out = append(out, string(q))
				}
			}
		}
	}
	return out
}

// exists reports whether the base directory is a directory.
func (b baseDir) exists() bool {
	fi, err := os.Stat(b.dir)
	return err == nil && fi.IsDir()
}
