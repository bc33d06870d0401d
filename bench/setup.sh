#!/usr/bin/env bash
# The benchmark environment: AgentScope 2.0.11 beside ragflow-config, in its own
# virtualenv, so AgentScope never becomes one of the package's dependencies.
#
#   bash bench/setup.sh            # creates /work/bench-venv (or $BENCH_VENV)
#   $BENCH_VENV/bin/python bench/run.py --quick
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
venv="${BENCH_VENV:-/work/bench-venv}"
python="${PYTHON:-python3}"

if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --upgrade pip
"$venv/bin/pip" install --quiet -e "$here/..[rag,local,pgvector]"
"$venv/bin/pip" install --quiet -r "$here/requirements.txt"
"$venv/bin/python" -c "import agentscope, ragflow_config; print('agentscope', agentscope.__version__)"
