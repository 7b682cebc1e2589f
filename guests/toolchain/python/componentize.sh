#!/usr/bin/env bash
# Builds one Python guest into a reconciler component:
#   componentize.sh NAME SOURCE.py WIT_DIR WORLD OUT.wasm
#
# The guests' own build.sh call this, so that every Python guest is built by one toolchain:
# componentize-py, pinned by requirements.txt beside this script, installed into a virtualenv in a cache
# outside the repo keyed by that file. An unchanged guest is not rebuilt: OUT.wasm.key records what it
# was built from (componentizing takes ~1 min). NAME prefixes the progress lines, on stderr.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
name="$1" source="$2" wit="$3" world="$4" out="$5"
venv="${RECONCILE_HOST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/reconcile-host}/py-venv"
mkdir -p "$(dirname "$venv")" "$(dirname "$out")"
exec 9>"$venv.lock" && flock 9 # one install or build at a time

"$here/../../../scripts/ensure-venv.sh" "$name" "$venv" "$here/requirements.txt"

key="$({ cat "$source" "$0" "$wit"/*.wit "$venv/.installed"; echo "$world"; } | sha256sum | cut -c1-16)"
if [ -f "$out" ] && [ "$(cat "$out.key" 2>/dev/null)" = "$key" ]; then
  exit 0
fi
echo "$name: componentizing $(basename "$source") into $out" >&2
# From a copy (at a fixed path, which ends up in the component): componentize-py runs the app while
# building and would leave __pycache__ in the repo.
src="$venv.src"
module="$(basename "$source" .py)"
rm -rf "$src" && mkdir -p "$src" && cp "$source" "$src/"
(cd "$src" && env -u VIRTUAL_ENV "$venv/bin/componentize-py" --quiet --wit-path "$wit" --world "$world" \
  componentize --python-path "$src" "$module" --output "$out.tmp") >&2
mv "$out.tmp" "$out"
echo "$key" >"$out.key"
