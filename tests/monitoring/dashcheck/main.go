// dashcheck loads a Grafana dashboard the way Grafana's own schema reads it, and checks that every
// Prometheus query in it parses and reads only metrics that a scrape of the host exposes.
//
//	dashcheck DASHBOARD.json METRICS.txt
//
// It exits 1 with every problem listed, or prints one line per query checked.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/prometheus/prometheus/promql/parser"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: dashcheck DASHBOARD.json METRICS.txt...")
		os.Exit(2)
	}
	problems, checked, err := check(os.Args[1], os.Args[2:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for _, line := range checked {
		fmt.Println(line)
	}
	if len(problems) > 0 {
		fmt.Fprintln(os.Stderr, strings.Join(problems, "\n"))
		os.Exit(1)
	}
}

func check(dashboardPath string, metricsPaths []string) (problems, checked []string, err error) {
	raw, err := os.ReadFile(dashboardPath)
	if err != nil {
		return nil, nil, err
	}
	exposed := map[string]bool{}
	for _, path := range metricsPaths {
		if err := exposedMetrics(path, exposed); err != nil {
			return nil, nil, err
		}
	}
	plugins.RegisterDefaultPlugins()
	var board dashboard.Dashboard
	if err := board.UnmarshalJSONStrict(raw); failed(err) {
		return []string{"the dashboard does not follow Grafana's schema: " + err.Error()}, nil, nil
	}
	if err := board.Validate(); failed(err) {
		return []string{"the dashboard is not valid: " + err.Error()}, nil, nil
	}
	// The SDK returns its empty error list as an error, so that a dashboard's union-typed panels come
	// out empty: each panel is read on its own.
	var layout struct {
		Panels []struct {
			Targets []json.RawMessage `json:"targets"`
		} `json:"panels"`
	}
	var rawPanels struct {
		Panels []json.RawMessage `json:"panels"`
	}
	if err := json.Unmarshal(raw, &layout); err != nil {
		return nil, nil, err
	}
	if err := json.Unmarshal(raw, &rawPanels); err != nil {
		return nil, nil, err
	}
	queries := 0
	for i, rawPanel := range rawPanels.Panels {
		var panel dashboard.Panel
		if err := panel.UnmarshalJSONStrict(rawPanel); failed(err) {
			problems = append(problems, fmt.Sprintf("panel %d does not follow Grafana's schema: %v", i, err))
			continue
		}
		if err := panel.Validate(); failed(err) {
			problems = append(problems, fmt.Sprintf("panel %d is not valid: %v", i, err))
			continue
		}
		title := "(untitled)"
		if panel.Title != nil {
			title = *panel.Title
		}
		targets := layout.Panels[i].Targets
		for _, target := range targets {
			var query prometheus.Dataquery
			if err := query.UnmarshalJSONStrict(target); failed(err) {
				problems = append(problems, fmt.Sprintf("panel %q: a query that is not Prometheus's: %v", title, err))
				continue
			}
			queries++
			expr, err := parser.NewParser(parser.Options{}).ParseExpr(grafanaVariables.Replace(query.Expr))
			if err != nil {
				problems = append(problems, fmt.Sprintf("panel %q: %q does not parse: %v", title, query.Expr, err))
				continue
			}
			for _, name := range metricNames(expr) {
				if !exposed[name] {
					problems = append(problems, fmt.Sprintf("panel %q: %q reads %s, which the host does not expose", title, query.Expr, name))
				}
			}
			checked = append(checked, fmt.Sprintf("%s: %s", title, query.Expr))
		}
		if len(targets) == 0 {
			problems = append(problems, fmt.Sprintf("panel %q has no query", title))
		}
	}
	if queries == 0 {
		problems = append(problems, "the dashboard has no Prometheus query")
	}
	return problems, checked, nil
}

// grafanaVariables stands in for the range variables Grafana replaces before a query reaches Prometheus.
var grafanaVariables = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h")

// failed tells an error from the SDK's empty error list, which it returns as a non-nil error.
func failed(err error) bool {
	var list cog.BuildErrors
	if errors.As(err, &list) {
		return len(list) > 0
	}
	return err != nil
}

// exposedMetrics adds to names the name of every sample of a scrape of the host (Prometheus or
// OpenMetrics text).
func exposedMetrics(path string, names map[string]bool) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	samples := 0
	for _, line := range strings.Split(string(raw), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, _, _ := strings.Cut(line, " ")
		name, _, _ = strings.Cut(name, "{")
		names[name] = true
		samples++
	}
	if samples == 0 {
		return fmt.Errorf("%s holds no sample", path)
	}
	return nil
}

// metricNames lists the metric names an expression selects.
func metricNames(expr parser.Expr) []string {
	seen := map[string]bool{}
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		if selector, ok := node.(*parser.VectorSelector); ok && selector.Name != "" {
			seen[selector.Name] = true
		}
		return nil
	})
	names := make([]string, 0, len(seen))
	for name := range seen {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
