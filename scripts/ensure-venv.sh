#!/usr/bin/env bash
# Makes sure the virtualenv VENV has REQUIREMENTS installed:   ensure-venv.sh NAME VENV REQUIREMENTS
#
# Keyed by the hash of REQUIREMENTS (in VENV/.installed): rebuilt from scratch when the file changes,
# untouched otherwise. NAME prefixes the progress line; pip's output goes to stderr. The caller holds
# whatever lock it needs.
set -euo pipefail
name="$1" venv="$2" requirements="$3"
key="$(sha256sum <"$requirements" | cut -c1-16)"
if [ "$(cat "$venv/.installed" 2>/dev/null)" != "$key" ]; then
  echo "$name: installing $(basename "$(dirname "$requirements")")/$(basename "$requirements") into $venv" >&2
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  "${PYTHON:-python3}" -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements" >&2
  echo "$key" >"$venv/.installed"
fi
