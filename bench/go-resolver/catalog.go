package main

// Loading a File-Based Catalog JSON stream and indexing it for resolution.
//
// Everything that does not depend on the request is computed here, once:
// parsed versions and ranges, each channel's preference order, each
// package's preference order, and each required GVK's provider order.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/blang/semver/v4"
)

// gvkKey identifies a GVK as "group/version/Kind".
type gvkKey string

func makeGVK(group, version, kind string) gvkKey {
	return gvkKey(group + "/" + version + "/" + kind)
}

type pkgRequirement struct {
	Package  string
	RangeStr string
	Range    semver.Range // nil when the range does not parse: matches nothing
}

type bundle struct {
	Idx        int
	Name       string
	Package    string
	VersionStr string
	Version    semver.Version
	HasVersion bool
	Provides   []gvkKey
	ReqPkgs    []pkgRequirement
	ReqGVKs    []gvkKey
}

type channelEntry struct {
	Bundle    int // index into catalog.Bundles
	Replaces  string
	Skips     []string
	SkipRange semver.Range // nil if absent or unparsable
}

type channel struct {
	Package string
	Name    string
	Entries []channelEntry
	// Ordered holds the channel's bundles in preference order:
	// version descending (semver precedence), ties by bundle name ascending.
	Ordered []int
}

type pkg struct {
	Name           string
	DefaultChannel string
	Channels       []*channel // sorted by name
	Default        *channel   // nil if the default channel is missing
	// Pref: every bundle of the package, default channel first, then the other
	// channels by name; within a channel channel.Ordered; first occurrence wins.
	Pref []int
}

type catalog struct {
	Bundles  []*bundle
	ByName   map[[2]string]int // (package, bundle name) -> index (first document wins)
	Packages map[string]*pkg
	Names    []string // package names, sorted
	// Providers: bundles providing each GVK (index order).
	Providers map[gvkKey][]int
	// GVKPref: for every GVK that some bundle requires, its providers in
	// OLM's sortBundles order (see README).
	GVKPref map[gvkKey][]int

	DuplicateBundles int // (package, name) documents dropped as duplicates
	DanglingEntries  int // channel entries naming no bundle
	BadVersions      int // bundles whose olm.package version does not parse
}

type rawDoc struct {
	Schema         string        `json:"schema"`
	Name           string        `json:"name"`
	Package        string        `json:"package"`
	DefaultChannel string        `json:"defaultChannel"`
	Entries        []rawEntry    `json:"entries"`
	Properties     []rawProperty `json:"properties"`
}

type rawEntry struct {
	Name      string   `json:"name"`
	Replaces  string   `json:"replaces"`
	Skips     []string `json:"skips"`
	SkipRange string   `json:"skipRange"`
}

type rawProperty struct {
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}

type propPackage struct {
	PackageName string `json:"packageName"`
	Version     string `json:"version"`
}

type propPackageRequired struct {
	PackageName  string `json:"packageName"`
	VersionRange string `json:"versionRange"`
}

type propGVK struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}

func loadCatalog(path string) (*catalog, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()

	c := &catalog{
		ByName:    map[[2]string]int{},
		Packages:  map[string]*pkg{},
		Providers: map[gvkKey][]int{},
		GVKPref:   map[gvkKey][]int{},
	}
	type rawChannel struct {
		pkg, name string
		entries   []rawEntry
	}
	var rawChannels []rawChannel

	dec := json.NewDecoder(bufio.NewReaderSize(f, 1<<20))
	for {
		var d rawDoc
		if err := dec.Decode(&d); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		switch d.Schema {
		case "olm.package":
			p := c.pkgOf(d.Name)
			p.DefaultChannel = d.DefaultChannel
		case "olm.channel":
			c.pkgOf(d.Package)
			rawChannels = append(rawChannels, rawChannel{d.Package, d.Name, d.Entries})
		case "olm.bundle":
			key := [2]string{d.Package, d.Name}
			if _, dup := c.ByName[key]; dup {
				c.DuplicateBundles++
				continue
			}
			b, err := parseBundle(&d)
			if err != nil {
				return nil, err
			}
			c.pkgOf(b.Package)
			if !b.HasVersion {
				c.BadVersions++
			}
			b.Idx = len(c.Bundles)
			c.Bundles = append(c.Bundles, b)
			c.ByName[key] = b.Idx
			for _, g := range b.Provides {
				c.Providers[g] = append(c.Providers[g], b.Idx)
			}
		}
	}

	for _, rc := range rawChannels {
		ch := &channel{Package: rc.pkg, Name: rc.name}
		inChannel := map[int]bool{}
		for _, e := range rc.entries {
			bi, ok := c.ByName[[2]string{rc.pkg, e.Name}]
			if !ok {
				c.DanglingEntries++
				continue
			}
			if inChannel[bi] {
				continue // a repeated entry: the first one counts
			}
			inChannel[bi] = true
			ce := channelEntry{Bundle: bi, Replaces: e.Replaces, Skips: e.Skips}
			if e.SkipRange != "" {
				if r, err := semver.ParseRange(e.SkipRange); err == nil {
					ce.SkipRange = r
				}
			}
			ch.Entries = append(ch.Entries, ce)
			ch.Ordered = append(ch.Ordered, bi)
		}
		sort.SliceStable(ch.Ordered, func(i, j int) bool {
			return c.prefers(ch.Ordered[i], ch.Ordered[j])
		})
		p := c.Packages[rc.pkg]
		p.Channels = append(p.Channels, ch)
	}

	for name, p := range c.Packages {
		c.Names = append(c.Names, name)
		sort.SliceStable(p.Channels, func(i, j int) bool { return p.Channels[i].Name < p.Channels[j].Name })
		for _, ch := range p.Channels {
			if ch.Name == p.DefaultChannel {
				p.Default = ch
			}
		}
		seenB := map[int]bool{}
		add := func(ch *channel) {
			for _, bi := range ch.Ordered {
				if !seenB[bi] {
					seenB[bi] = true
					p.Pref = append(p.Pref, bi)
				}
			}
		}
		if p.Default != nil {
			add(p.Default)
		}
		for _, ch := range p.Channels {
			if ch != p.Default {
				add(ch)
			}
		}
	}
	sort.Strings(c.Names)

	for _, b := range c.Bundles {
		for _, g := range b.ReqGVKs {
			if _, done := c.GVKPref[g]; !done {
				c.GVKPref[g] = c.gvkPreference(g)
			}
		}
	}
	return c, nil
}

func (c *catalog) pkgOf(name string) *pkg {
	p, ok := c.Packages[name]
	if !ok {
		p = &pkg{Name: name}
		c.Packages[name] = p
	}
	return p
}

// prefers reports whether bundle a comes before bundle b within a channel:
// higher version first (bundles without a parseable version last), then name.
func (c *catalog) prefers(a, b int) bool {
	ba, bb := c.Bundles[a], c.Bundles[b]
	if ba.HasVersion != bb.HasVersion {
		return ba.HasVersion
	}
	if ba.HasVersion {
		if cmp := ba.Version.Compare(bb.Version); cmp != 0 {
			return cmp > 0
		}
	}
	return ba.Name < bb.Name
}

// gvkPreference orders the providers of a GVK like OLM's sortBundles: every
// (package, channel) that lists a provider is a group; groups that are their
// package's default channel come first, then by package name, then by channel
// name; within a group the channel order; a bundle keeps its first place.
func (c *catalog) gvkPreference(g gvkKey) []int {
	provides := map[int]bool{}
	pkgs := map[string]bool{}
	for _, bi := range c.Providers[g] {
		provides[bi] = true
		pkgs[c.Bundles[bi].Package] = true
	}
	type group struct {
		isDefault bool
		pkg, ch   string
		c         *channel
	}
	var groups []group
	for name := range pkgs {
		p := c.Packages[name]
		for _, ch := range p.Channels {
			for _, bi := range ch.Ordered {
				if provides[bi] {
					groups = append(groups, group{ch == p.Default, name, ch.Name, ch})
					break
				}
			}
		}
	}
	sort.Slice(groups, func(i, j int) bool {
		gi, gj := groups[i], groups[j]
		if gi.isDefault != gj.isDefault {
			return gi.isDefault
		}
		if gi.pkg != gj.pkg {
			return gi.pkg < gj.pkg
		}
		return gi.ch < gj.ch
	})
	var out []int
	seen := map[int]bool{}
	for _, gr := range groups {
		for _, bi := range gr.c.Ordered {
			if provides[bi] && !seen[bi] {
				seen[bi] = true
				out = append(out, bi)
			}
		}
	}
	return out
}

func parseBundle(d *rawDoc) (*bundle, error) {
	b := &bundle{Name: d.Name, Package: d.Package}
	for _, p := range d.Properties {
		switch p.Type {
		case "olm.package":
			var v propPackage
			if err := json.Unmarshal(p.Value, &v); err != nil {
				return nil, fmt.Errorf("bundle %s: olm.package: %w", d.Name, err)
			}
			b.VersionStr = v.Version
			if ver, err := semver.Parse(v.Version); err == nil {
				b.Version, b.HasVersion = ver, true
			}
		case "olm.gvk":
			var v propGVK
			if err := json.Unmarshal(p.Value, &v); err != nil {
				return nil, fmt.Errorf("bundle %s: olm.gvk: %w", d.Name, err)
			}
			g := makeGVK(v.Group, v.Version, v.Kind)
			if !containsGVK(b.Provides, g) {
				b.Provides = append(b.Provides, g)
			}
		case "olm.package.required":
			var v propPackageRequired
			if err := json.Unmarshal(p.Value, &v); err != nil {
				return nil, fmt.Errorf("bundle %s: olm.package.required: %w", d.Name, err)
			}
			req := pkgRequirement{Package: v.PackageName, RangeStr: v.VersionRange}
			if r, err := semver.ParseRange(v.VersionRange); err == nil {
				req.Range = r
			}
			b.ReqPkgs = append(b.ReqPkgs, req)
		case "olm.gvk.required":
			var v propGVK
			if err := json.Unmarshal(p.Value, &v); err != nil {
				return nil, fmt.Errorf("bundle %s: olm.gvk.required: %w", d.Name, err)
			}
			b.ReqGVKs = append(b.ReqGVKs, makeGVK(v.Group, v.Version, v.Kind))
		}
	}
	return b, nil
}

func containsGVK(list []gvkKey, g gvkKey) bool {
	for _, x := range list {
		if x == g {
			return true
		}
	}
	return false
}
