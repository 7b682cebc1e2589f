// The test registry, built from Go modules like the control plane: go-containerregistry's registry
// (the one `crane registry serve` runs) with blobs on disk and optional basic auth.
module reconcile-host/tests/registry

go 1.26

require github.com/google/go-containerregistry v0.22.1
