#!/usr/bin/env bash
# Runs the seed's Python controller against $KUBECONFIG:   run.sh
#
# The Python `kubernetes` client (pinned by requirements.txt) is installed into a virtualenv in a cache
# outside the repo, keyed by that file. Installing goes to stderr.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${RECONCILE_HOST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/reconcile-host}/seed-python-venv"
mkdir -p "$(dirname "$venv")"
(exec 9>"$venv.lock" && flock 9 && "$here/../../scripts/ensure-venv.sh" seed-python "$venv" "$here/requirements.txt")
[ "${1:-}" = "--install-only" ] && exit 0
exec "$venv/bin/python" -u "$here/controller.py"
