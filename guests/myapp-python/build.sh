#!/usr/bin/env bash
# Builds the Python MyApp guest into a reconciler component:   build.sh OUT.wasm
#
# componentize-py (pinned by requirements.txt) is installed into a virtualenv in a cache outside the repo,
# keyed by that file. An unchanged guest is not rebuilt: OUT.wasm.key records what it was built from
# (componentizing takes ~1 min). Progress goes to stderr.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:?usage: build.sh OUT.wasm}"
wit="$here/../../wit/v0.1.0"
venv="${RECONCILE_HOST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/reconcile-host}/py-venv"
mkdir -p "$(dirname "$venv")" "$(dirname "$out")"
exec 9>"$venv.lock" && flock 9 # one install or build at a time

"$here/../../scripts/ensure-venv.sh" myapp-python "$venv" "$here/requirements.txt"

key="$(cat "$here/app.py" "$here/build.sh" "$wit"/*.wit "$venv/.installed" | sha256sum | cut -c1-16)"
if [ -f "$out" ] && [ "$(cat "$out.key" 2>/dev/null)" = "$key" ]; then
  exit 0
fi
echo "myapp-python: componentizing app.py into $out" >&2
# From a copy (at a fixed path, which ends up in the component): componentize-py runs the app while
# building and would leave __pycache__ in the repo.
src="$venv.src"
rm -rf "$src" && mkdir -p "$src" && cp "$here/app.py" "$src/"
(cd "$src" && env -u VIRTUAL_ENV "$venv/bin/componentize-py" --quiet --wit-path "$wit" --world reconciler \
  componentize --python-path "$src" app --output "$out.tmp") >&2
mv "$out.tmp" "$out"
echo "$key" >"$out.key"
