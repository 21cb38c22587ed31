package realcluster

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/relaysim/relaysim/system"
)

// probesPrefix names the file each relayd adds its code probes to
// (relayd -probes), one per node: probes-n1.json, ...
const probesPrefix = "probes-"

// readProbes sums the probe files the relayd processes wrote in dir (nil:
// none written, e.g. every process was killed).
func readProbes(dir string) map[string]int {
	files, _ := filepath.Glob(filepath.Join(dir, probesPrefix+"*.json"))
	var out map[string]int
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var hits map[string]int
		if json.Unmarshal(data, &hits) != nil {
			continue
		}
		for name, n := range hits {
			if out == nil {
				out = map[string]int{}
			}
			out[name] += n
		}
	}
	return out
}

// ProbesLine is "H/N hit: name hits, ..." in registry order.
func ProbesLine(hits map[string]int) string {
	var parts []string
	all := system.Probes()
	for _, p := range all {
		if n := hits[p.Name]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", p.Name, n))
		}
	}
	return fmt.Sprintf("%d/%d hit: %s", len(parts), len(all), strings.Join(parts, ", "))
}
