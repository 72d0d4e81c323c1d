package ops

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ptojit/ptojit/registry/module"
	"github.com/ptojit/ptojit/registry/opquery"
)

// The query, its tensors and the rejections are package opquery's, which
// implements the matching rules; these names keep them reachable as ops.X.
type (
	Tensor    = opquery.Tensor
	Query     = opquery.Query
	Rejection = opquery.Rejection
	Param     = opquery.Param
)

// Unlimited is a budget without a limit.
const Unlimited = opquery.Unlimited

// Candidate is one implementation known to the resolver: its descriptor
// and the module that provides it.
type Candidate struct {
	Desc          *Descriptor
	Module        string // package_id
	ModuleVersion string
	Deps          []string // package_ids the module depends on, transitively
	Runtime       string   // the runtime the module's callables are built for

	installed *module.Installed
}

// Choice is a compatible candidate with what negotiation gave.
type Choice struct {
	ImplID        string `json:"impl_id"`
	Module        string `json:"module"`
	Version       string `json:"version"` // op_version
	Priority      int64  `json:"priority"`
	Platform      string `json:"platform"`
	HostScratch   uint64 `json:"host_scratch"`
	DeviceScratch uint64 `json:"device_scratch"`

	cand    *Candidate
	tensors []Tensor // the query's tensors for this candidate: inputs then outputs
	scalars []uint64 // the query's parameters, encoded in the descriptor's order
}

// Result is the outcome of a resolution: the compatible candidates in
// order (the first is chosen) and every rejected candidate with its reason,
// by impl_id.
type Result struct {
	Compatible []Choice
	Rejected   []Rejection
}

// Chosen is the first compatible candidate, or nil.
func (r *Result) Chosen() *Choice {
	if len(r.Compatible) == 0 {
		return nil
	}
	return &r.Compatible[0]
}

// NotFoundError says that no candidate fits; Result lists why.
type NotFoundError struct {
	Query  string
	Result *Result
}

func (e *NotFoundError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "no compatible implementation of %s", e.Query)
	if len(e.Result.Rejected) == 0 {
		b.WriteString(": no enabled module provides it")
	}
	for _, r := range e.Result.Rejected {
		fmt.Fprintf(&b, "\n  rejected %s", r)
	}
	return b.String()
}

// negotiator runs a candidate's validate and scratch query on its tensors.
// An error with a *rejectErr is a refusal; anything else fails the
// resolution.
type negotiator interface {
	negotiate(c *Choice, q *Query) error
}

// rejectErr makes a negotiation refusal.
type rejectErr struct{ kind, reason string }

func (e *rejectErr) Error() string { return e.reason }

func newChoice(c *Candidate, f *opquery.Fit) Choice {
	return Choice{ImplID: c.Desc.ImplID, Module: c.Module, Version: c.Desc.OpVersion.String(), Priority: c.Desc.Priority,
		Platform: f.Platform, HostScratch: f.HostScratch, DeviceScratch: f.DeviceScratch, cand: c, tensors: f.Tensors, scalars: f.Scalars}
}

// resolve matches the candidates against q (opquery.Match), negotiating the
// ones that fit their descriptors with neg. platforms are the platforms
// the caller can execute, in preference order, and runtime the runtime its
// workers run ("" for any).
func resolve(cands []*Candidate, q *Query, platforms []string, runtime string, neg negotiator) (*Result, error) {
	qc := make([]opquery.Candidate, len(cands))
	for i, c := range cands {
		qc[i] = opquery.Candidate{Desc: &c.Desc.Descriptor, Module: c.Module, Runtime: c.Runtime}
	}
	chs := make([]Choice, len(cands)) // by candidate: what negotiation gave
	fits, rejected, err := opquery.Match(qc, q, opquery.Env{Platforms: platforms, Runtime: runtime,
		Negotiate: func(f *opquery.Fit) error {
			ch := &chs[f.Cand]
			*ch = newChoice(cands[f.Cand], f)
			if err := neg.negotiate(ch, q); err != nil {
				var re *rejectErr
				if errors.As(err, &re) {
					return &opquery.Refusal{Kind: re.kind, Reason: re.reason}
				}
				return err
			}
			f.HostScratch, f.DeviceScratch = ch.HostScratch, ch.DeviceScratch
			return nil
		}})
	if err != nil {
		return nil, err
	}
	res := &Result{Compatible: make([]Choice, len(fits)), Rejected: rejected}
	for i := range fits {
		res.Compatible[i] = chs[fits[i].Cand]
	}
	if len(res.Compatible) == 0 {
		return res, &NotFoundError{Query: q.Describe(), Result: res}
	}
	return res, nil
}
