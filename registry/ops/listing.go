package ops

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/ptojit/ptojit/registry/module"
)

// Implementation is one implementation of an operation as op ls lists it.
type Implementation struct {
	OpName        string   `json:"op_name"`
	OpVersion     string   `json:"op_version"`
	ImplID        string   `json:"impl_id"`
	Priority      int64    `json:"priority"`
	Module        string   `json:"module"`
	ModuleVersion string   `json:"module_version"`
	Platforms     []string `json:"platforms"`
}

// Implementations lists the implementations the modules mods provide, by
// operation, then by descending priority, then by impl_id; problems are
// the descriptors left out, each an error naming it.
func Implementations(mods []*module.Installed) (list []Implementation, problems []error) {
	cands, problems := CandidatesOf(mods)
	list = []Implementation{}
	for _, c := range cands {
		var plats []string
		for _, cb := range c.Desc.Callables {
			plats = append(plats, cb.Platform)
		}
		list = append(list, Implementation{OpName: c.Desc.OpName, OpVersion: c.Desc.OpVersion.String(), ImplID: c.Desc.ImplID,
			Priority: c.Desc.Priority, Module: c.Module, ModuleVersion: c.ModuleVersion, Platforms: plats})
	}
	slices.SortFunc(list, func(a, b Implementation) int {
		if c := strings.Compare(a.OpName, b.OpName); c != 0 {
			return c
		}
		if a.Priority != b.Priority {
			if a.Priority > b.Priority {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ImplID, b.ImplID)
	})
	return list, problems
}

// WriteImplementations writes list as op ls prints it: a table.
func WriteImplementations(w io.Writer, list []Implementation) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "OPERATION\tVERSION\tIMPLEMENTATION\tPRIORITY\tMODULE\tPLATFORMS")
	for _, x := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s@%s\t%s\n", x.OpName, x.OpVersion, x.ImplID, x.Priority, x.Module, x.ModuleVersion, strings.Join(x.Platforms, ","))
	}
	return tw.Flush()
}

// Resolution is a resolution's result as op resolve --json prints it.
type Resolution struct {
	Chosen *ChoiceReport `json:"chosen"`
	// Compatible lists every compatible candidate in order: the chosen
	// one first, then the fallbacks.
	Compatible []ChoiceReport    `json:"compatible"`
	Rejected   []RejectionReport `json:"rejected"`
}

// ChoiceReport is one compatible implementation in a Resolution.
type ChoiceReport struct {
	ImplID        string `json:"impl_id"`
	Module        string `json:"module"`
	Version       string `json:"version"`
	Priority      int64  `json:"priority"`
	HostScratch   uint64 `json:"host_scratch"`
	DeviceScratch uint64 `json:"device_scratch"`
}

// RejectionReport is one rejected implementation in a Resolution.
type RejectionReport struct {
	ImplID string `json:"impl_id"`
	Module string `json:"module"`
	Kind   string `json:"kind"`
	Reason string `json:"reason"`
}

// NewResolution is the report of res.
func NewResolution(res *Result) *Resolution {
	j := &Resolution{Compatible: []ChoiceReport{}, Rejected: []RejectionReport{}}
	for _, c := range res.Compatible {
		j.Compatible = append(j.Compatible, ChoiceReport{ImplID: c.ImplID, Module: c.Module, Version: c.Version, Priority: c.Priority,
			HostScratch: c.HostScratch, DeviceScratch: c.DeviceScratch})
	}
	if len(j.Compatible) > 0 {
		j.Chosen = &j.Compatible[0]
	}
	for _, r := range res.Rejected {
		j.Rejected = append(j.Rejected, RejectionReport{ImplID: r.ImplID, Module: r.Module, Kind: r.Kind, Reason: r.Reason})
	}
	return j
}

// WriteText writes the report as op resolve prints it: the chosen
// implementation, the fallbacks, then the rejected ones with the reason.
func (j *Resolution) WriteText(out io.Writer) error {
	var b strings.Builder
	for i, c := range j.Compatible {
		what := "fallback"
		if i == 0 {
			what = "chosen  "
		}
		fmt.Fprintf(&b, "%s  %s  module %s  version %s  priority %d", what, c.ImplID, c.Module, c.Version, c.Priority)
		if c.HostScratch > 0 || c.DeviceScratch > 0 {
			fmt.Fprintf(&b, "  scratch host %d device %d", c.HostScratch, c.DeviceScratch)
		}
		b.WriteString("\n")
	}
	for _, r := range j.Rejected {
		fmt.Fprintf(&b, "rejected  %s  module %s: %s\n", r.ImplID, r.Module, r.Reason)
	}
	_, err := io.WriteString(out, b.String())
	return err
}
