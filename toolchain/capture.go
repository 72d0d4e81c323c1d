package toolchain

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sync/singleflight"

	"github.com/ptojit/ptojit/inventory"
)

// Options configures an InstallationIdentityCache. Plain data, safe for
// concurrent reads.
type Options struct {
	// BeforeDir is passed to inventory.FingerprintWith for every content
	// read, and called for every directory the PTO-ISA check walks; the
	// daemon starts watching the directory there. An error aborts the read
	// (the component is then unavailable and nothing is memoized).
	BeforeDir func(resolvedDir string) error
	// Workers is passed to inventory.FingerprintWith (0: its default).
	Workers int
	// Resolving, when set, is called at the start of every resolution
	// that Resolve's memo does not answer (tests count them).
	Resolving func()
}

// InstallationIdentityCache computes component identities and memoizes the
// successful ones by their complete resolved inventory: policy, component
// name, roots, unavailable reason, verified revision, reported version and
// epoch. A changed selection is a different key. Concurrent callers asking
// for the same key share one read (singleflight); a failed read is returned
// to its callers and not memoized, so the next Capture reads again.
//
// Forget and ForgetAll drop memos when the files beneath them change; a read
// that was in flight when Forget ran is not memoized either.
//
// An InstallationIdentityCache is safe for concurrent use.
type InstallationIdentityCache struct {
	opt    Options
	flight singleflight.Group

	// mu guards memo, resolved, reads and gen. While it is held, only
	// the lock of a readDeps in reads is taken.
	mu       sync.Mutex
	memo     map[inventory.Sum]*memoEntry
	resolved map[inventory.Sum]*resolvedEntry
	// reads are the dependencies, so far, of the reads in flight.
	reads map[*readDeps]struct{}
	// gen counts the Forget calls that dropped a memo or met a read in
	// flight that depends on their path, and ForgetAll calls; a read
	// started at an older generation is not memoized, and flights are
	// keyed by generation so that callers after such a Forget never join
	// an older read. A Forget of a path nothing depends on leaves it: a
	// read in flight then is memoized.
	gen uint64
	// keys are the memo keys of the components of each inputs Capture
	// was given (memoKeys). They depend on nothing but the inputs, so
	// they outlive every Forget.
	keys map[*ToolchainInputs]*inputKeys

	// readHook, when set (tests), runs at the start of every component read.
	readHook func(name string)
}

type memoEntry struct {
	// id is the component's identity; for an entry under a valueKey,
	// only its name and file count, and value the build-policy record
	// (buildValue) every epoch's identity is made from.
	id    ComponentIdentity
	value *buildRecord
	// roots are the root paths as given and as resolved.
	roots []string
	// dirs holds every resolved directory the read visited: listed, or
	// holding a file it read.
	dirs map[string]struct{}
	// above holds every ancestor of the directories of dirs (made by
	// dependsOn when first needed; guarded by InstallationIdentityCache.mu):
	// the removal or renaming of one of them changes what the read saw.
	above map[string]struct{}
}

// readDeps are the dependencies of a read in flight: its roots and the
// directories it visited so far. Safe for concurrent use.
type readDeps struct {
	mu sync.Mutex // guards e
	e  memoEntry
}

// startRead registers a read in flight with the given roots; the returned
// readDeps records the directories it visits (recordDirs) and must be
// ended with endRead.
func (c *InstallationIdentityCache) startRead(roots []inventory.ContentRoot) *readDeps {
	r := &readDeps{e: memoEntry{dirs: map[string]struct{}{}}}
	r.e.addRoots(roots)
	c.mu.Lock()
	if c.reads == nil {
		c.reads = map[*readDeps]struct{}{}
	}
	c.reads[r] = struct{}{}
	c.mu.Unlock()
	return r
}

// endRead forgets a read that is no longer in flight (one whose result
// is memoized leaves c.reads under the same lock as it enters the memo).
func (c *InstallationIdentityCache) endRead(r *readDeps) {
	c.mu.Lock()
	delete(c.reads, r)
	c.mu.Unlock()
}

// addRoots records roots (as addRoots of a memoEntry) on a read in flight.
func (r *readDeps) addRoots(roots []inventory.ContentRoot) {
	r.mu.Lock()
	r.e.addRoots(roots)
	r.mu.Unlock()
}

// dependsOn reports whether the read, as far as it got, depends on path.
func (r *readDeps) dependsOn(path string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.e.above = nil // the directories grow while the read runs
	return r.e.dependsOn(path)
}

// NewInstallationIdentityCache returns an empty cache.
func NewInstallationIdentityCache(opt Options) *InstallationIdentityCache {
	return &InstallationIdentityCache{opt: opt, memo: map[inventory.Sum]*memoEntry{}, resolved: map[inventory.Sum]*resolvedEntry{}}
}

// Capture returns the identity of the five components of in: every
// component's digest or the reason it has none, and the toolchain digest
// when all five have one. Unavailable components are part of the result,
// not errors; the error is non-nil only when ctx ends first.
func (c *InstallationIdentityCache) Capture(ctx context.Context, in *ToolchainInputs) (*Identity, error) {
	policy := in.Policy
	if policy == "" {
		policy = PolicyContent
	}
	id := &Identity{Policy: policy, Components: make([]ComponentIdentity, len(Names))}
	type pending struct {
		i  int
		ch <-chan singleflight.Result
	}
	var waits []pending
	keys := c.memoKeys(policy, in)
	for i, name := range Names {
		ci := in.Component(name)
		if reason := ci.Reason(); reason != "" {
			id.Components[i] = ComponentIdentity{Name: name, Unavailable: reason}
			continue
		}
		key := keys[i]
		c.mu.Lock()
		m, gen := c.memo[key], c.gen
		c.mu.Unlock()
		if m != nil {
			id.Components[i] = m.id
			continue
		}
		inputs := *ci
		fk := key.String() + "@" + strconv.FormatUint(gen, 10)
		ch := c.flight.DoChan(fk, func() (any, error) {
			return c.read(policy, in, name, inputs, key, gen), nil
		})
		waits = append(waits, pending{i, ch})
	}
	for _, w := range waits {
		select {
		case r := <-w.ch:
			id.Components[w.i] = r.Val.(ComponentIdentity)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	var sums [5]inventory.Sum
	id.Usable = true
	for i, ci := range id.Components {
		if ci.Unavailable != "" {
			id.Usable = false
		}
		sums[i] = ci.Digest
	}
	if id.Usable {
		id.Digest = ToolchainDigest(sums)
	}
	return id, nil
}

// read computes one component's identity and memoizes it when it has a
// digest and no Forget ran meanwhile.
func (c *InstallationIdentityCache) read(policy Policy, in *ToolchainInputs, name string, ci ComponentInputs, key inventory.Sum, gen uint64) ComponentIdentity {
	// A flight that finished between the caller's memo lookup and its
	// joining the group has memoized the answer already.
	c.mu.Lock()
	m := c.memo[key]
	c.mu.Unlock()
	if m != nil {
		return m.id
	}
	var vkey inventory.Sum // the key of the build-policy value
	if policy == PolicyBuild {
		// The value no epoch enters is kept under its own key: a new
		// epoch costs a digest, not a read.
		vkey = valueKey(name, &ci)
		if out, ok := c.fromValue(in, name, vkey, key, gen); ok {
			return out
		}
	}
	deps := c.startRead(ci.Roots)
	defer c.endRead(deps)
	if c.readHook != nil {
		c.readHook(name)
	}
	before := c.recordDirs(deps)
	dirs := deps.e.dirs // read once the read is done
	if c.opt.BeforeDir != nil {
		for _, r := range ci.Roots {
			if err := watchRootPath(r.Path(), c.opt.BeforeDir); err != nil {
				return ComponentIdentity{Name: name, Unavailable: "cannot watch " + r.Path() + ": " + err.Error()}
			}
		}
	}
	var out ComponentIdentity
	switch policy {
	case PolicyBuild:
		var value *buildRecord
		if out, value = buildValue(name, ci, before); out.Unavailable == "" {
			e := &memoEntry{id: out, value: value, dirs: dirs}
			e.addRoots(ci.Roots)
			c.mu.Lock()
			if c.gen == gen {
				c.memo[vkey] = e
			}
			c.mu.Unlock()
			out = withEpoch(out, in, value)
		}
	default:
		out = contentIdentity(name, ci, inventory.FingerprintOptions{Workers: c.opt.Workers, BeforeDir: before})
	}
	if out.Unavailable != "" {
		return out
	}
	e := &memoEntry{id: out, dirs: dirs}
	e.addRoots(ci.Roots)
	c.mu.Lock()
	delete(c.reads, deps) // with the memo: no Forget between the two
	if c.gen == gen {
		c.memo[key] = e
	}
	c.mu.Unlock()
	return out
}

// fromValue answers the build-policy identity of component name from the
// memo of its value (under vkey, its valueKey) when it holds one, and
// memoizes the identity under key (unless a Forget ran since gen).
func (c *InstallationIdentityCache) fromValue(in *ToolchainInputs, name string, vkey, key inventory.Sum, gen uint64) (ComponentIdentity, bool) {
	c.mu.Lock()
	ve := c.memo[vkey]
	c.mu.Unlock()
	if ve == nil {
		return ComponentIdentity{}, false
	}
	out := withEpoch(ComponentIdentity{Name: name, Files: ve.id.Files}, in, ve.value)
	if out.Unavailable == "" {
		c.mu.Lock()
		if c.gen == gen && c.memo[vkey] == ve {
			c.memo[key] = &memoEntry{id: out, roots: ve.roots, dirs: ve.dirs}
		}
		c.mu.Unlock()
	}
	return out, true
}

// addRoots records each root's path as given and, when it differs, as
// resolved.
func (e *memoEntry) addRoots(roots []inventory.ContentRoot) {
	for _, r := range roots {
		e.roots = append(e.roots, r.Path())
		if res, err := filepath.EvalSymlinks(r.Path()); err == nil && res != r.Path() {
			e.roots = append(e.roots, res)
		}
	}
}

// recordDirs returns a BeforeDir, safe for concurrent use, that adds each
// directory to the dependencies of the read in flight r before calling
// Options.BeforeDir (which starts watching it): an event about it is
// matched to the read from then on.
func (c *InstallationIdentityCache) recordDirs(r *readDeps) func(string) error {
	return func(dir string) error {
		r.mu.Lock()
		r.e.dirs[filepath.Clean(dir)] = struct{}{}
		r.mu.Unlock()
		if c.opt.BeforeDir != nil {
			return c.opt.BeforeDir(dir)
		}
		return nil
	}
}

// watchRootPath passes to watch what a content read does not: the
// directory holding each symlink on the way to root (so a retargeted link
// is seen) and, for a root that is a file, the directory holding it and
// the one holding what it resolves to (so a replaced file is seen). Forget
// matches those changes by the root's own path.
func watchRootPath(root string, watch func(string) error) error {
	seen := map[string]bool{}
	w := func(dir string) error {
		if seen[dir] {
			return nil
		}
		seen[dir] = true
		return watch(dir)
	}
	for p := root; p != "/" && p != "." && p != ""; p = filepath.Dir(p) {
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			if err := w(filepath.Dir(p)); err != nil {
				return err
			}
		}
	}
	fi, err := os.Stat(root)
	if err != nil || fi.IsDir() {
		return nil // the read reports a missing root; directories are watched by the read
	}
	if err := w(filepath.Dir(root)); err != nil {
		return err
	}
	if res, err := filepath.EvalSymlinks(root); err == nil {
		return w(filepath.Dir(res))
	}
	return nil
}

// contentIdentity is the content-policy identity of one component.
func contentIdentity(name string, ci ComponentInputs, opt inventory.FingerprintOptions) ComponentIdentity {
	out := ComponentIdentity{Name: name}
	ev := inventory.Dict{}
	switch {
	case ci.VerifiedRevision != "":
		ev["verified_revision"] = inventory.Str(ci.VerifiedRevision)
	case len(ci.Roots) > 0:
		content, err := inventory.FingerprintWith(ci.Roots, opt)
		if err != nil {
			out.Unavailable = readFailure(err)
			return out
		}
		if content.Files == 0 {
			// An empty required installation inventory is unavailable.
			out.Unavailable = "empty inventory: its roots hold no file"
			return out
		}
		ev["content"] = inventory.Str(content.Digest.String())
		out.Files, out.Bytes = content.Files, content.Bytes
		out.ContentRoots = content.Roots
	}
	if ci.ReportedVersion != "" {
		ev["reported_version"] = inventory.Str(ci.ReportedVersion)
	}
	if ci.FallbackReason != "" {
		ev["fallback_reason"] = inventory.Str(ci.FallbackReason)
	}
	return finish(out, ev)
}

func finish(out ComponentIdentity, ev inventory.Dict) ComponentIdentity {
	if len(ev) == 0 {
		out.Unavailable = "no evidence: no content inputs, revision or version"
		return out
	}
	d, err := ComponentDigest(out.Name, ev)
	if err != nil {
		out.Unavailable = "evidence has no identity record: " + err.Error()
		return out
	}
	out.Digest, out.Evidence = d, ev
	return out
}

// readFailure turns a failed read into an unavailable reason.
func readFailure(err error) string {
	var ue *inventory.UnavailableError
	if errors.As(err, &ue) {
		return ue.Error()
	}
	return "cannot read contents: " + err.Error()
}

// valueKey is the key of a component's build-policy value: its memoKey
// without the epoch, under a tag of its own.
func valueKey(name string, ci *ComponentInputs) inventory.Sum {
	k := memoKey(PolicyBuild, &ToolchainInputs{Policy: PolicyBuild}, name, ci)
	return inventory.MustDigest(inventory.T(inventory.Str("ptojit.toolchain.value"), inventory.IntOf(1), inventory.Bytes(k[:])))
}

// maxKeyMemo bounds the inputs whose memo keys are kept; past it they
// start over.
const maxKeyMemo = 256

// inputKeys are the memo keys of the components of in (in the order of
// Names; zero for a component with no identity); in is a copy of the
// inputs they were computed from, its roots copied too.
type inputKeys struct {
	in   ToolchainInputs
	keys [5]inventory.Sum
}

// memoKeys returns the memo keys of the components of in, computed once
// per inputs: a warm hit gets the same inputs from the resolution memo
// every time. They are looked up by the inputs' address and used only when
// the inputs still hold everything memoKey reads (a caller may change a
// value it passed before), which costs comparisons of shared strings
// instead of an encoding and a SHA-256 per component.
func (c *InstallationIdentityCache) memoKeys(policy Policy, in *ToolchainInputs) *[5]inventory.Sum {
	c.mu.Lock()
	k := c.keys[in]
	c.mu.Unlock()
	if k != nil && sameKeyInputs(&k.in, in) {
		return &k.keys
	}
	k = &inputKeys{in: *in}
	for _, name := range Names {
		ci := k.in.Component(name)
		ci.Roots = slices.Clone(ci.Roots)
	}
	for i, name := range Names {
		if ci := in.Component(name); ci.Reason() == "" {
			k.keys[i] = memoKey(policy, in, name, ci)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.keys == nil || len(c.keys) >= maxKeyMemo {
		c.keys = map[*ToolchainInputs]*inputKeys{}
	}
	c.keys[in] = k
	return &k.keys
}

// sameKeyInputs reports whether a and b hold the same of everything the
// memo keys of their components are made from.
func sameKeyInputs(a, b *ToolchainInputs) bool {
	if a.Policy != b.Policy || a.Epoch != b.Epoch || a.EpochSet != b.EpochSet {
		return false
	}
	for _, name := range Names {
		x, y := a.Component(name), b.Component(name)
		if x.UnavailableReason != y.UnavailableReason || x.VerifiedRevision != y.VerifiedRevision ||
			x.ReportedVersion != y.ReportedVersion || x.FallbackReason != y.FallbackReason || x.build != y.build || x.complete != y.complete ||
			!slices.Equal(x.Roots, y.Roots) {
			return false
		}
	}
	return true
}

// memoKey is the digest of the complete resolved inventory of a component.
func memoKey(policy Policy, in *ToolchainInputs, name string, ci *ComponentInputs) inventory.Sum {
	roots := make(inventory.List, len(ci.Roots))
	for i, r := range ci.Roots {
		roots[i] = inventory.T(inventory.StrFromOSBytes(r.Path()), inventory.Bool(rootPythonOnly(r)))
	}
	var epoch, build inventory.Value = inventory.None{}, inventory.None{}
	if policy == PolicyBuild {
		if in.EpochSet {
			epoch = inventory.StrFromOSBytes(in.Epoch)
		}
		if ci.build != nil {
			build = ci.build.key
		}
	}
	return inventory.MustDigest(inventory.T(
		inventory.Str("ptojit.toolchain.memo"), inventory.IntOf(3),
		inventory.Str(string(policy)), epoch, build, inventory.Str(name), roots,
		inventory.StrFromOSBytes(ci.UnavailableReason),
		inventory.StrFromOSBytes(ci.VerifiedRevision),
		inventory.StrFromOSBytes(ci.ReportedVersion),
		inventory.StrFromOSBytes(ci.FallbackReason),
	))
}

func rootPythonOnly(r inventory.ContentRoot) bool { return r.PythonOnly() }

// Forget drops every memo that depends on path, the name an event of the
// file system gave (memoEntry.dependsOn), and keeps every other. A read in
// flight that depends on path, as far as it got, is not memoized (nor,
// then, any read in flight); one that does not is. It returns how many
// memos it dropped.
func (c *InstallationIdentityCache) Forget(path string) int {
	path = filepath.Clean(path)
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for k, e := range c.memo {
		if e.dependsOn(path) {
			delete(c.memo, k)
			n++
		}
	}
	for k, e := range c.resolved {
		if e.dependsOn(path) {
			delete(c.resolved, k)
			n++
		}
	}
	stale := n > 0
	for r := range c.reads {
		if stale {
			break
		}
		stale = r.dependsOn(path)
	}
	if stale {
		c.gen++
	}
	return n
}

// dependsOn reports whether the memo depends on path, the name of a file
// or directory an event of the file system gave (a child of a watched
// directory): path is under one of its roots, or on the way to one; path
// is a directory it visited or a name in one (a file created, written or
// removed there changes the listing or the file it read); or path is an
// ancestor of a directory it visited (removed or renamed, it takes that
// directory with it). A name in a directory above those it visited
// (another file beside the installation) is none of these.
func (e *memoEntry) dependsOn(path string) bool {
	for _, r := range e.roots {
		if within(path, r) || within(r, path) {
			return true
		}
	}
	if _, ok := e.dirs[path]; ok {
		return true
	}
	if _, ok := e.dirs[filepath.Dir(path)]; ok {
		return true
	}
	if e.above == nil {
		e.above = map[string]struct{}{}
		for d := range e.dirs {
			for p := filepath.Dir(d); ; p = filepath.Dir(p) {
				if _, ok := e.above[p]; ok {
					break
				}
				e.above[p] = struct{}{}
				if filepath.Dir(p) == p {
					break
				}
			}
		}
	}
	_, ok := e.above[path]
	return ok
}

// within reports whether p is dir or lies beneath it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir) && (strings.HasSuffix(dir, string(os.PathSeparator)) || p[len(dir)] == os.PathSeparator)
}

// ForgetAll drops every memo (the daemon calls it when its watch queue
// overflows).
func (c *InstallationIdentityCache) ForgetAll() {
	c.mu.Lock()
	c.gen++
	clear(c.memo)
	clear(c.resolved)
	c.mu.Unlock()
}

// Len returns the number of memoized component identities.
func (c *InstallationIdentityCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.memo) + len(c.resolved)
}

// resolvedEntry is a memoized resolution.
type resolvedEntry struct {
	in *ToolchainInputs
	memoEntry
}

// Resolve is the package's Resolve, memoized by the complete Config and
// the environment the probes see (a changed selection, PATH or CC is a new
// key), but for the variables Config.ToolResolutionVar leaves out, and for
// the epoch and policy variables when the resolution does not read them
// (resolveKey). A resolution is memoized only when every component is available;
// Forget drops it when anything under its roots, the PTO-ISA worktree or
// .git directory, the ptoas launcher directory or the CANN root changes.
// Options.BeforeDir is called for each of those directories. The
// directories of PATH are not watched: a compiler installed earlier on PATH
// is noticed only through a changed environment or ForgetAll. The returned
// inputs are shared: callers must not modify them.
func (c *InstallationIdentityCache) Resolve(ctx context.Context, cfg Config) (*ToolchainInputs, error) {
	in, err := c.resolve(ctx, cfg)
	return inputsWithEpoch(in, &cfg), err
}

// inputsWithEpoch returns in with the epoch of cfg's environment, a copy
// when in (shared with the memo, whose key has no epoch) records another:
// resolution reads the epoch only to record it under the build policy.
func inputsWithEpoch(in *ToolchainInputs, cfg *Config) *ToolchainInputs {
	if in == nil || in.Policy != PolicyBuild {
		return in
	}
	epoch, set := cfg.lookupEpoch()
	if in.Epoch == epoch && in.EpochSet == set {
		return in
	}
	c := *in
	c.Epoch, c.EpochSet = epoch, set
	return &c
}

// resolve is Resolve before the epoch is applied.
func (c *InstallationIdentityCache) resolve(ctx context.Context, cfg Config) (*ToolchainInputs, error) {
	key := resolveKey(&cfg)
	c.mu.Lock()
	e, gen := c.resolved[key], c.gen
	c.mu.Unlock()
	if e != nil {
		return e.in, nil
	}
	ch := c.flight.DoChan("resolve:"+key.String()+"@"+strconv.FormatUint(gen, 10), func() (any, error) {
		c.mu.Lock()
		done := c.resolved[key]
		c.mu.Unlock()
		if done != nil {
			return done.in, nil
		}
		if c.opt.Resolving != nil {
			c.opt.Resolving()
		}
		deps := c.startRead(nil)
		defer c.endRead(deps)
		in, err := resolve(context.WithoutCancel(ctx), cfg, c.recordDirs(deps))
		if err != nil {
			return in, err
		}
		for _, n := range Names {
			ci := in.Component(n)
			if ci.Reason() != "" {
				return in, nil
			}
			deps.addRoots(ci.Roots)
		}
		e := &resolvedEntry{in: in, memoEntry: memoEntry{dirs: deps.e.dirs, roots: deps.e.roots}}
		c.mu.Lock()
		delete(c.reads, deps) // with the memo: no Forget between the two
		if c.gen == gen {
			c.resolved[key] = e
		}
		c.mu.Unlock()
		return in, nil
	})
	select {
	case r := <-ch:
		in, _ := r.Val.(*ToolchainInputs)
		return in, r.Err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// resolveKey is the digest of everything a resolution depends on: the
// Config, the variables of the environment that Config.ToolResolutionVar
// admits, and those the adapters read by name. The policy variable counts
// only when Config.Policy is empty. The epoch never does: it is semantic,
// and the build policy only records it in the inputs, which Resolve sets
// on the memo's answer (inputsWithEpoch).
func resolveKey(cfg *Config) inventory.Sum {
	strs := func(xs []string) inventory.List {
		l := make(inventory.List, len(xs))
		for i, x := range xs {
			l[i] = inventory.StrFromOSBytes(x)
		}
		return l
	}
	env := slices.Clone(cfg.environ())
	if cfg.ToolResolutionVar != nil {
		env = slices.DeleteFunc(env, func(kv string) bool {
			name, _, _ := strings.Cut(kv, "=")
			return !cfg.ToolResolutionVar(name)
		})
	}
	slices.Sort(env)
	names := []string{PtoasRootEnv, CannRootEnv, PtoIsaRootEnv, "PATH", "CC", "CXX"}
	if cfg.Policy == "" {
		names = append(names, PolicyEnv)
	}
	names = append(names, ToolResolutionVars...)
	read := make([]string, len(names))
	for i, n := range names {
		read[i] = n + "=" + cfg.getenv(n)
	}
	return inventory.MustDigest(inventory.T(
		inventory.Str("ptojit.toolchain.resolve"), inventory.IntOf(1),
		strs([]string{string(cfg.Policy), cfg.Platform, cfg.PyptoRoot, cfg.RuntimeRoot, cfg.PtoIsaRoot,
			cfg.PtoIsaPin, cfg.PtoIsaURL, cfg.PtoasRoot, cfg.CannRoot}),
		strs(cfg.DeviceRoots), strs(env), strs(read),
	))
}
