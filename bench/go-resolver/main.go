// Command go-resolver is the Go peer benchmark for Pakket's resolver: it
// resolves "install P" for every package of a File-Based Catalog with OLM's
// SAT encoding, solved by deppy (operator-framework's gini-based solver),
// and prints timing statistics as one JSON object. See README.md.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const solverModule = "github.com/operator-framework/deppy"

type stats struct {
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

type report struct {
	Tool             string  `json:"tool"`
	Module           string  `json:"module"`
	Catalog          string  `json:"catalog"`
	LoadMs           float64 `json:"load_ms"`
	Packages         int     `json:"packages"`
	Solved           int     `json:"solved"`
	Unsat            int     `json:"unsat"`
	Installed        int     `json:"installed"`
	InstalledSkipped int     `json:"installed_skipped"`
	Repeat           int     `json:"repeat"`
	Timing           string  `json:"timing"`
	ResolveUs        stats   `json:"resolve_us"`
	MaxRssMb         float64 `json:"max_rss_mb"`
}

type pkgResult struct {
	Package string   `json:"package"`
	Sat     bool     `json:"sat"`
	Bundles []string `json:"bundles,omitempty"`
	Vars    int      `json:"vars"`
	Us      float64  `json:"us"`
}

func main() {
	catalogPath := flag.String("catalog", "", "path to the FBC JSON stream (required)")
	installedN := flag.Int("installed", 0, "treat the first N packages (by name) that resolve, and resolve together, as installed")
	repeat := flag.Int("repeat", 3, "resolve each package K times and keep the fastest")
	resultsPath := flag.String("results", "", "optional: write one JSON line per package (selected bundles, time) to this file")
	explain := flag.String("explain", "", "optional: resolve only this package (with the installed set) and print the result or the unsatisfiable core to stderr")
	flag.Parse()
	if *catalogPath == "" || *repeat < 1 || *installedN < 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*catalogPath, *installedN, *repeat, *resultsPath, *explain); err != nil {
		fmt.Fprintln(os.Stderr, "go-resolver:", err)
		os.Exit(1)
	}
}

func run(catalogPath string, installedN, repeat int, resultsPath, explain string) error {
	t0 := time.Now()
	c, err := loadCatalog(catalogPath)
	if err != nil {
		return err
	}
	loadMs := float64(time.Since(t0).Microseconds()) / 1000

	nChannels := 0
	for _, p := range c.Packages {
		nChannels += len(p.Channels)
	}
	fmt.Fprintf(os.Stderr, "loaded %s in %.1f ms: %d packages, %d channels, %d bundles (%d duplicate bundle documents dropped, %d dangling channel entries, %d unparsable versions)\n",
		catalogPath, loadMs, len(c.Names), nChannels, len(c.Bundles), c.DuplicateBundles, c.DanglingEntries, c.BadVersions)

	// The installed set: walk packages by name; take one if "install P"
	// alone succeeds and the already-installed set plus P (its selected
	// bundle, under a subscription) is still satisfiable.
	var installed []installedOperator
	skipped := 0
	if installedN > 0 {
		for _, name := range c.Names {
			if len(installed) == installedN {
				break
			}
			res, err := resolve(c, name, nil)
			if err != nil {
				return err
			}
			if !res.OK {
				continue
			}
			cand := append(append([]installedOperator(nil), installed...), installedOperator{name, c.chosenFor(res, name)})
			joint, err := resolve(c, "", cand)
			if err != nil {
				return err
			}
			if !joint.OK {
				skipped++
				fmt.Fprintf(os.Stderr, "installed set: skipping %s (conflicts with the packages installed before it)\n", name)
				continue
			}
			installed = cand
		}
		fmt.Fprintf(os.Stderr, "installed set: %d operators (%d skipped for conflicts)\n", len(installed), skipped)
	}

	if explain != "" {
		res, err := resolve(c, explain, installed)
		if err != nil {
			return err
		}
		if !res.OK {
			fmt.Fprintf(os.Stderr, "%s: %d variables, unsatisfiable: %v\n", explain, res.Vars, res.Err)
			return nil
		}
		fmt.Fprintf(os.Stderr, "%s: %d variables, selected:\n", explain, res.Vars)
		for _, bi := range res.Bundles {
			fmt.Fprintf(os.Stderr, "  %s\n", c.Bundles[bi].Name)
		}
		return nil
	}

	var results []pkgResult
	var times []float64
	solved, unsat := 0, 0
	for _, name := range c.Names {
		best := math.Inf(1)
		var res resolution
		for k := 0; k < repeat; k++ {
			start := time.Now()
			r, err := resolve(c, name, installed)
			us := float64(time.Since(start).Nanoseconds()) / 1000
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if us < best {
				best = us
			}
			res = r
		}
		times = append(times, best)
		pr := pkgResult{Package: name, Sat: res.OK, Vars: res.Vars, Us: round1(best)}
		if res.OK {
			solved++
			for _, bi := range res.Bundles {
				pr.Bundles = append(pr.Bundles, c.Bundles[bi].Name)
			}
		} else {
			unsat++
		}
		results = append(results, pr)
	}

	if resultsPath != "" {
		if err := writeResults(resultsPath, results); err != nil {
			return err
		}
	}

	rep := report{
		Tool:             "deppy",
		Module:           moduleVersion(),
		Catalog:          catalogPath,
		LoadMs:           round1(loadMs),
		Packages:         len(c.Names),
		Solved:           solved,
		Unsat:            unsat,
		Installed:        len(installed),
		InstalledSkipped: skipped,
		Repeat:           repeat,
		Timing:           "per package: min over repeats of build-variables + solve wall time",
		ResolveUs:        summarize(times),
		MaxRssMb:         maxRSSMb(),
	}
	out, _ := json.Marshal(rep)
	fmt.Println(string(out))

	s := rep.ResolveUs
	fmt.Fprintf(os.Stderr, "resolved %d packages (%d installed, repeat %d): %d solved, %d unsatisfiable\n",
		rep.Packages, rep.Installed, repeat, solved, unsat)
	fmt.Fprintf(os.Stderr, "resolve time (us): p50 %.1f  p99 %.1f  max %.1f  mean %.1f; max RSS %.1f MiB\n",
		s.P50, s.P99, s.Max, s.Mean, rep.MaxRssMb)
	slow := append([]pkgResult(nil), results...)
	sort.SliceStable(slow, func(i, j int) bool { return slow[i].Us > slow[j].Us })
	for i := 0; i < 5 && i < len(slow); i++ {
		fmt.Fprintf(os.Stderr, "  slowest: %-45s %9.1f us  %5d vars  sat=%v\n", slow[i].Package, slow[i].Us, slow[i].Vars, slow[i].Sat)
	}
	return nil
}

func writeResults(path string, results []pkgResult) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, r := range results {
		if err := enc.Encode(r); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// summarize: nearest-rank percentiles over the per-package times.
func summarize(v []float64) stats {
	if len(v) == 0 {
		return stats{}
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	rank := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		if i < 0 {
			i = 0
		}
		return s[i]
	}
	sum := 0.0
	for _, x := range s {
		sum += x
	}
	return stats{P50: round1(rank(0.50)), P99: round1(rank(0.99)), Max: round1(s[len(s)-1]), Mean: round1(sum / float64(len(s)))}
}

func round1(x float64) float64 { return math.Round(x*10) / 10 }

// maxRSSMb is this program's own peak resident memory, in MiB. On Linux it
// is VmHWM from /proc/self/status: the high-water mark of the memory map
// that exec gave this program. getrusage's ru_maxrss is not used there
// because exec carries it over: a process started by a parent (the Rust
// bench spawns bash, which execs this binary) inherits the parent's peak in
// it, so it would report the caller's memory, not deppy's.
func maxRSSMb() float64 {
	if kib, ok := vmHWMKiB(); ok {
		return round1(kib / 1024)
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	if runtime.GOOS == "darwin" {
		return round1(float64(ru.Maxrss) / (1024 * 1024)) // bytes there
	}
	return round1(float64(ru.Maxrss) / 1024) // KiB elsewhere
}

// vmHWMKiB reads the VmHWM line ("VmHWM:    31416 kB") of /proc/self/status.
func vmHWMKiB() (float64, bool) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(status), "\n") {
		fields := strings.Fields(line)
		if len(fields) >= 2 && fields[0] == "VmHWM:" {
			kib, err := strconv.ParseFloat(fields[1], 64)
			return kib, err == nil
		}
	}
	return 0, false
}

func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == solverModule {
				if d.Replace != nil {
					d = d.Replace
				}
				return d.Path + "@" + d.Version
			}
		}
	}
	return solverModule + "@unknown"
}
