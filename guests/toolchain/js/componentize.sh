#!/usr/bin/env bash
# Builds one JavaScript guest into a reconciler component:
#   componentize.sh NAME SOURCE.js WIT_DIR WORLD OUT.wasm
#
# The guests' own build.sh call this, so that every JavaScript guest is built by one toolchain:
# componentize-js, pinned by package.json and package-lock.json beside this script, installed into a
# cache outside the repo keyed by those two files. An unchanged guest is not rebuilt: OUT.wasm.key records
# what it was built from (componentizing takes ~40 s). NAME prefixes the progress lines, on stderr.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
name="$1" source="$2" wit="$3" world="$4" out="$5"
tools="${RECONCILE_HOST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/reconcile-host}/js"
mkdir -p "$tools" "$(dirname "$out")"
exec 9>"$tools.lock" && flock 9 # one install or build at a time

tools_key="$(cat "$here/package.json" "$here/package-lock.json" | sha256sum | cut -c1-16)"
if [ "$(cat "$tools/.installed" 2>/dev/null)" != "$tools_key" ]; then
  echo "$name: installing componentize-js into $tools" >&2
  cp "$here/package.json" "$here/package-lock.json" "$tools/"
  (cd "$tools" && npm ci --no-audit --no-fund --loglevel=error) >&2
  echo "$tools_key" >"$tools/.installed"
fi

key="$({ cat "$source" "$0" "$wit"/*.wit "$tools/.installed"; echo "$world"; } | sha256sum | cut -c1-16)"
if [ -f "$out" ] && [ "$(cat "$out.key" 2>/dev/null)" = "$key" ]; then
  exit 0
fi
echo "$name: componentizing $(basename "$source") into $out" >&2
# The guests use neither `fetch` nor incoming HTTP: without `http` and `fetch-event` the component imports
# no wasi:http, which the host does not provide. stdio stays so that an uncaught error reaches the host log.
"$tools/node_modules/.bin/componentize-js" "$source" --wit "$wit" --world-name "$world" \
  --disable http fetch-event --out "$out.tmp" >&2
mv "$out.tmp" "$out"
echo "$key" >"$out.key"
