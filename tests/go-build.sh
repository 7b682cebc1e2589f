# Sourced by the scripts that build test tools from Go modules (the control plane, the monitoring
# tools). `go_build NAME MODULE_DIR PACKAGE [LDFLAGS]` builds PACKAGE, from the Go module in
# MODULE_DIR, into "$bin/NAME" unless it is there already; a failed build names the tool and shows the
# tail of its log. "$bin" and "$tools" (a name for the messages) are the caller's.
go_build() {
  local name=$1 dir=$2 pkg=$3 ldflags=${4:-}
  if [ -x "$bin/$name" ]; then return 0; fi
  local log="$bin/$name.build.log" start=$SECONDS
  echo "$tools: building $name ($pkg)" >&2
  if ! (cd "$dir" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w $ldflags" -o "$bin/$name.tmp" "$pkg") >"$log" 2>&1; then
    echo "$tools: building $name FAILED (module $dir, package $pkg); last lines of $log:" >&2
    tail -n 30 "$log" >&2
    exit 1
  fi
  mv "$bin/$name.tmp" "$bin/$name"
  echo "$tools: built $name in $((SECONDS - start)) s" >&2
}
