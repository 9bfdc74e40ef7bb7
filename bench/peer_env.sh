#!/usr/bin/env bash
# Create (idempotently) the interpreter that runs the diffprivlib peer of bench_forest.py
# and print its python path on stdout (progress goes to stderr).
#
# Why a separate venv: diffprivlib 0.6.x imports sklearn.tree._tree.DOUBLE, which
# scikit-learn >= 1.6 removed, so it cannot share the project's environment.
#
#   python bench/bench_forest.py --peer-python "$(bash bench/peer_env.sh)"
#
# DPEXP_PEER_VENV overrides the location (default: .bench-venv at the repository root,
# where bench_forest.py looks for it); PYTHON picks the base interpreter (default: python3).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${DPEXP_PEER_VENV:-$root/.bench-venv}"
base="${PYTHON:-python3}"
py="$venv/bin/python"
# Pins known to import together: sklearn 1.5 still has _tree.DOUBLE; numpy < 2 because
# sklearn 1.5 wheels and diffprivlib 0.6 were built and tested against numpy 1.x.
reqs=("diffprivlib>=0.6,<0.7" "scikit-learn>=1.3,<1.6" "numpy>=1.23,<2")

check() { "$py" -c "import diffprivlib.models, sklearn, numpy" >/dev/null 2>&1; }

if [ -x "$py" ] && check; then
  echo "$(cd "$(dirname "$py")" && pwd)/python"
  exit 0
fi

echo "creating peer venv at $venv" >&2
"$base" -m venv "$venv"
# Keep the venv out of git status without touching the repository's .gitignore.
echo "*" > "$venv/.gitignore"
# Only PyPI through the ordinary pip client.
"$py" -m pip install --quiet --disable-pip-version-check "${reqs[@]}" >&2
check || { echo "peer venv at $venv cannot import diffprivlib" >&2; exit 1; }
echo "$(cd "$(dirname "$py")" && pwd)/python"
