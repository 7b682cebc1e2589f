#!/usr/bin/env bash
# Runs the seed's Python controller against $KUBECONFIG:   run.sh
#
# The Python `kubernetes` client (pinned by requirements.txt) is installed into a virtualenv in a cache
# outside the repo, keyed by that file. Installing goes to stderr.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${RECONCILE_HOST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/reconcile-host}/seed-python-venv"
mkdir -p "$(dirname "$venv")"
key="$(sha256sum <"$here/requirements.txt" | cut -c1-16)"
if [ "$(cat "$venv/.installed" 2>/dev/null)" != "$key" ]; then
  (
    exec 9>"$venv.lock" && flock 9
    if [ "$(cat "$venv/.installed" 2>/dev/null)" != "$key" ]; then
      echo "seed-python: installing the kubernetes client into $venv" >&2
      rm -rf "$venv"
      "${PYTHON:-python3}" -m venv "$venv"
      "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt" >&2
      echo "$key" >"$venv/.installed"
    fi
  )
fi
[ "${1:-}" = "--install-only" ] && exit 0
exec "$venv/bin/python" -u "$here/controller.py"
