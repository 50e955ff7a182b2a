package main

// One resolution, encoded the way OLM's SAT resolver does it and solved with
// deppy's gini-based solver. See README.md for the encoding.

import (
	"errors"
	"fmt"
	"sort"

	"github.com/operator-framework/deppy/pkg/deppy"
	"github.com/operator-framework/deppy/pkg/deppy/constraint"
	"github.com/operator-framework/deppy/pkg/deppy/solver"
)

// variable is a deppy.Variable; bundle is the catalog index of the bundle
// it stands for, or -1 for request, subscription and invariant variables.
type variable struct {
	id          deppy.Identifier
	constraints []deppy.Constraint
	bundle      int
}

func (v *variable) Identifier() deppy.Identifier    { return v.id }
func (v *variable) Constraints() []deppy.Constraint { return v.constraints }

// installedOperator is an operator already on the cluster, installed through
// a subscription to its package's default channel.
type installedOperator struct {
	Package string
	Bundle  int
}

type resolution struct {
	OK      bool
	Bundles []int // selected bundles, by catalog index (ascending)
	Vars    int   // variables handed to the solver
	Err     error // the NotSatisfiable explanation when !OK
}

type builder struct {
	c      *catalog
	queued map[int]bool
	queue  []int
	extra  map[int][]deppy.Constraint
}

func bundleID(b *bundle) deppy.Identifier {
	return deppy.Identifier(b.Package + "/" + b.Name)
}

// ids enqueues the bundles (so that their variables get built) and returns
// their identifiers, in order.
func (r *builder) ids(bundles []int) []deppy.Identifier {
	out := make([]deppy.Identifier, len(bundles))
	for i, bi := range bundles {
		out[i] = bundleID(r.c.Bundles[bi])
		if !r.queued[bi] {
			r.queued[bi] = true
			r.queue = append(r.queue, bi)
		}
	}
	return out
}

// upgrades lists, in channel preference order, the entries of the default
// channel of the installed bundle's package that may replace it: they name it
// in replaces or skips, or their skipRange contains its version.
func upgrades(c *catalog, in installedOperator) []int {
	p := c.Packages[in.Package]
	if p == nil || p.Default == nil {
		return nil
	}
	cur := c.Bundles[in.Bundle]
	ok := map[int]bool{}
	for _, e := range p.Default.Entries {
		if e.Bundle == in.Bundle {
			continue
		}
		match := e.Replaces == cur.Name
		for _, s := range e.Skips {
			if s == cur.Name {
				match = true
			}
		}
		if !match && e.SkipRange != nil && cur.HasVersion && e.SkipRange(cur.Version) {
			match = true
		}
		if match {
			ok[e.Bundle] = true
		}
	}
	var out []int
	for _, bi := range p.Default.Ordered {
		if ok[bi] {
			out = append(out, bi)
			delete(ok, bi)
		}
	}
	return out
}

// packageCandidates: bundles of the package whose version is in the range,
// default channel first, then other channels by name, each in channel order.
func (c *catalog) packageCandidates(req pkgRequirement) []int {
	p := c.Packages[req.Package]
	if p == nil || req.Range == nil {
		return nil
	}
	var out []int
	for _, bi := range p.Pref {
		b := c.Bundles[bi]
		if b.HasVersion && req.Range(b.Version) {
			out = append(out, bi)
		}
	}
	return out
}

// resolve builds the variables reachable from the request (may be "") and the
// installed operators, then solves.
func resolve(c *catalog, request string, installed []installedOperator) (resolution, error) {
	r := &builder{c: c, queued: map[int]bool{}, extra: map[int][]deppy.Constraint{}}
	var input []deppy.Variable

	if request != "" {
		var cands []int
		if p := c.Packages[request]; p != nil && p.Default != nil {
			cands = p.Default.Ordered
		}
		input = append(input, &variable{
			id:          deppy.Identifier("request/" + request),
			constraints: []deppy.Constraint{constraint.Mandatory(), constraint.Dependency(r.ids(cands)...)},
			bundle:      -1,
		})
	}
	for _, in := range installed {
		ups := upgrades(c, in)
		cur := bundleID(c.Bundles[in.Bundle])
		for _, u := range ups {
			r.extra[u] = append(r.extra[u], constraint.Conflict(cur))
		}
		deps := r.ids(append(ups, in.Bundle))
		input = append(input, &variable{
			id:          deppy.Identifier("subscription/" + in.Package),
			constraints: []deppy.Constraint{constraint.Mandatory(), constraint.Dependency(deps...)},
			bundle:      -1,
		})
	}

	// Breadth-first over dependencies: every candidate of every dependency
	// of a reachable bundle is reachable.
	for i := 0; i < len(r.queue); i++ {
		bi := r.queue[i]
		b := c.Bundles[bi]
		cons := append([]deppy.Constraint(nil), r.extra[bi]...)
		for _, req := range b.ReqPkgs {
			cons = append(cons, constraint.Dependency(r.ids(c.packageCandidates(req))...))
		}
		for _, g := range b.ReqGVKs {
			cons = append(cons, constraint.Dependency(r.ids(c.GVKPref[g])...))
		}
		input = append(input, &variable{id: bundleID(b), constraints: cons, bundle: bi})
	}

	// Invariants over the reachable bundles: at most one bundle per package,
	// at most one provider per GVK.
	byPkg := map[string][]deppy.Identifier{}
	byGVK := map[gvkKey][]deppy.Identifier{}
	for _, bi := range r.queue {
		b := c.Bundles[bi]
		id := bundleID(b)
		byPkg[b.Package] = append(byPkg[b.Package], id)
		for _, g := range b.Provides {
			byGVK[g] = append(byGVK[g], id)
		}
	}
	pkgKeys := make([]string, 0, len(byPkg))
	for k, ids := range byPkg {
		if len(ids) > 1 {
			pkgKeys = append(pkgKeys, k)
		}
	}
	sort.Strings(pkgKeys)
	for _, k := range pkgKeys {
		input = append(input, &variable{
			id:          deppy.Identifier("pkgunique/" + k),
			constraints: []deppy.Constraint{constraint.Mandatory(), constraint.AtMost(1, byPkg[k]...)},
			bundle:      -1,
		})
	}
	gvkKeys := make([]string, 0, len(byGVK))
	for k, ids := range byGVK {
		if len(ids) > 1 {
			gvkKeys = append(gvkKeys, string(k))
		}
	}
	sort.Strings(gvkKeys)
	for _, k := range gvkKeys {
		input = append(input, &variable{
			id:          deppy.Identifier("gvkunique/" + k),
			constraints: []deppy.Constraint{constraint.Mandatory(), constraint.AtMost(1, byGVK[gvkKey(k)]...)},
			bundle:      -1,
		})
	}

	s, err := solver.New()
	if err != nil {
		return resolution{}, err
	}
	selected, err := s.Solve(input)
	res := resolution{Vars: len(input)}
	if err != nil {
		var ns deppy.NotSatisfiable
		if errors.As(err, &ns) {
			res.Err = err
			return res, nil
		}
		return res, fmt.Errorf("solver: %w", err)
	}
	res.OK = true
	for _, v := range selected {
		if bv, ok := v.(*variable); ok && bv.bundle >= 0 {
			res.Bundles = append(res.Bundles, bv.bundle)
		}
	}
	sort.Ints(res.Bundles)
	return res, nil
}

// chosenFor returns the selected bundle of the package, or -1.
func (c *catalog) chosenFor(res resolution, pkgName string) int {
	for _, bi := range res.Bundles {
		if c.Bundles[bi].Package == pkgName {
			return bi
		}
	}
	return -1
}
