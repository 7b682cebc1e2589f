#!/usr/bin/env bash
# Builds the JavaScript MyApp guest into a reconciler component:   build.sh OUT.wasm
#
# componentize-js (pinned by package.json and package-lock.json) is installed into a cache outside the repo,
# keyed by those two files. An unchanged guest is not rebuilt: OUT.wasm.key records what it was built from
# (componentizing takes ~40 s). Progress goes to stderr.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:?usage: build.sh OUT.wasm}"
wit="$here/../../wit/v0.1.0"
tools="${RECONCILE_HOST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/reconcile-host}/js"
mkdir -p "$tools" "$(dirname "$out")"
exec 9>"$tools.lock" && flock 9 # one install or build at a time

tools_key="$(cat "$here/package.json" "$here/package-lock.json" | sha256sum | cut -c1-16)"
if [ "$(cat "$tools/.installed" 2>/dev/null)" != "$tools_key" ]; then
  echo "myapp-js: installing componentize-js into $tools" >&2
  cp "$here/package.json" "$here/package-lock.json" "$tools/"
  (cd "$tools" && npm ci --no-audit --no-fund --loglevel=error) >&2
  echo "$tools_key" >"$tools/.installed"
fi

key="$(cat "$here/myapp.js" "$here/build.sh" "$wit"/*.wit "$tools/.installed" | sha256sum | cut -c1-16)"
if [ -f "$out" ] && [ "$(cat "$out.key" 2>/dev/null)" = "$key" ]; then
  exit 0
fi
echo "myapp-js: componentizing myapp.js into $out" >&2
# The guest uses neither `fetch` nor incoming HTTP: without `http` and `fetch-event` the component imports
# no wasi:http, which the host does not provide. stdio stays so that an uncaught error reaches the host log.
"$tools/node_modules/.bin/componentize-js" "$here/myapp.js" --wit "$wit" --world-name reconciler \
  --disable http fetch-event --out "$out.tmp" >&2
mv "$out.tmp" "$out"
echo "$key" >"$out.key"
