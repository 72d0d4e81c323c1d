package module

import (
	"fmt"
	"slices"
	"strings"
)

// GraphError is a dependency edge that graph validation refuses. It names
// both modules, the edge and the reason.
type GraphError struct {
	From   string // "package_id@version" of the dependent
	To     string // the dependency's id, with "@version" when one is enabled
	Edge   string // the edge as declared (Dependency.String)
	Reason string
}

func (e *GraphError) Error() string {
	return fmt.Sprintf("module %s depends on %s (%s): %s", e.From, e.To, e.Edge, e.Reason)
}

// ProtectedError is a disable or remove of a module that enabled modules
// depend on.
type ProtectedError struct {
	Op         string // "disable", "remove"
	Module     string
	Dependents []string
}

func (e *ProtectedError) Error() string {
	return fmt.Sprintf("cannot %s %s: enabled modules depend on it: %s (disable or remove them first)", e.Op, e.Module, strings.Join(e.Dependents, ", "))
}

// validateGraph checks every edge of every enabled module of st, that no
// implementation id is provided twice, and that there is no cycle; it
// returns the enabled modules in load order (dependencies first, ties by
// id).
func validateGraph(st *state) ([]*Installed, error) {
	enabled := make(map[string]*Installed, len(st.Modules))
	for _, m := range st.Modules {
		if m.Enabled {
			if prev := enabled[m.PackageID]; prev != nil {
				return nil, fmt.Errorf("module store state: two versions of %s are enabled (%s and %s)", m.PackageID, prev.Version, m.Version)
			}
			enabled[m.PackageID] = m
		}
	}
	ids := make([]string, 0, len(enabled))
	for id := range enabled {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	impl := map[string]*Installed{}
	for _, id := range ids {
		m := enabled[id]
		for _, d := range m.Manifest.Dependencies {
			if err := checkDependency(st, m, d, enabled[d.ModuleID]); err != nil {
				return nil, err
			}
		}
		for _, op := range m.Manifest.ProvidedOps {
			if other := impl[op]; other != nil {
				return nil, fmt.Errorf("implementation id %s is provided by both %s and %s (implementation ids are globally unique)", op, other.ID(), m.ID())
			}
			impl[op] = m
		}
	}
	// Kahn's algorithm; the ready set is kept sorted so the order is
	// deterministic.
	indeg := map[string]int{}
	dependents := map[string][]string{}
	for _, id := range ids {
		for _, d := range enabled[id].Manifest.Dependencies {
			indeg[id]++
			dependents[d.ModuleID] = append(dependents[d.ModuleID], id)
		}
	}
	var ready []string
	for _, id := range ids {
		if indeg[id] == 0 {
			ready = append(ready, id)
		}
	}
	order := make([]*Installed, 0, len(ids))
	for len(ready) > 0 {
		id := ready[0]
		ready = ready[1:]
		order = append(order, enabled[id])
		for _, dep := range dependents[id] {
			indeg[dep]--
			if indeg[dep] == 0 {
				i, _ := slices.BinarySearch(ready, dep)
				ready = slices.Insert(ready, i, dep)
			}
		}
	}
	if len(order) < len(ids) {
		return nil, cycleError(enabled, ids, indeg)
	}
	return order, nil
}

// checkDependency checks the edge d of the enabled module m against t,
// the enabled module it names (nil when none is): it must exist, and its
// version, module ABI, publisher and digest must meet d.
func checkDependency(st *state, m *Installed, d Dependency, t *Installed) error {
	fail := func(format string, args ...any) error {
		to := d.ModuleID
		if t != nil {
			to = t.ID()
		}
		return &GraphError{From: m.ID(), To: to, Edge: d.String(), Reason: fmt.Sprintf(format, args...)}
	}
	if t == nil {
		var vs []string
		for _, x := range st.versions(d.ModuleID) {
			vs = append(vs, x.Version)
		}
		if len(vs) > 0 {
			return fail("the dependency is disabled (installed: %s; none enabled)", strings.Join(vs, ", "))
		}
		return fail("the dependency is missing (not installed)")
	}
	v := t.Manifest.version
	if v.Compare(d.lo) < 0 {
		return fail("version %s is below min_version %s", t.Version, d.MinVersion)
	}
	if d.MaxVersion != "" && v.Compare(d.hi) > 0 {
		return fail("version %s is above max_version %s", t.Version, d.MaxVersion)
	}
	if t.Manifest.ModuleABI != ModuleABI {
		return fail("the dependency has module_abi %d, not %d", t.Manifest.ModuleABI, ModuleABI)
	}
	if d.PublisherID != "" && d.PublisherID != t.Manifest.Publisher {
		return fail("publisher pin %s, but the dependency's publisher is %s", d.PublisherID, t.Manifest.Publisher)
	}
	if d.SHA256 != "" && d.SHA256 != t.Digest {
		return fail("digest pin %s, but the dependency's manifest digest is %s", d.SHA256, t.Digest)
	}
	return nil
}

// cycleError finds one cycle among the modules left with dependencies and
// reports its first edge.
func cycleError(enabled map[string]*Installed, ids []string, indeg map[string]int) error {
	var start string
	for _, id := range ids {
		if indeg[id] > 0 {
			start = id
			break
		}
	}
	seen := map[string]int{}
	path := []string{}
	cur := start
	for {
		if i, ok := seen[cur]; ok {
			cyc := append(path[i:], cur)
			from, to := enabled[cyc[0]], enabled[cyc[1]]
			var edge Dependency
			for _, d := range from.Manifest.Dependencies {
				if d.ModuleID == cyc[1] {
					edge = d
				}
			}
			names := make([]string, len(cyc))
			for k, id := range cyc {
				names[k] = enabled[id].ID()
			}
			return &GraphError{From: from.ID(), To: to.ID(), Edge: edge.String(), Reason: "dependency cycle " + strings.Join(names, " -> ")}
		}
		seen[cur] = len(path)
		path = append(path, cur)
		next := ""
		for _, d := range enabled[cur].Manifest.Dependencies {
			if indeg[d.ModuleID] > 0 {
				next = d.ModuleID
				break
			}
		}
		cur = next
	}
}

// dependents returns the enabled modules with an edge to id, sorted.
func dependents(st *state, id string) []string {
	var out []string
	for _, m := range st.Modules {
		if !m.Enabled {
			continue
		}
		for _, d := range m.Manifest.Dependencies {
			if d.ModuleID == id {
				out = append(out, m.ID())
			}
		}
	}
	slices.Sort(out)
	return out
}
