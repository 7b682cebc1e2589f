//go:build tools

// Pins promtool's module in go.mod so that `go build github.com/prometheus/prometheus/cmd/promtool`
// builds the version go.sum names.
package tools

import _ "github.com/prometheus/prometheus/cmd/promtool"
