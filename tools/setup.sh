#!/usr/bin/env bash
# Set up pagerank-proxy on a fresh Debian machine: system packages, then a
# virtual environment (.venv) with the project and its test tools.
#   bash tools/setup.sh           everything the demo and the tests need
#   bash tools/setup.sh --bench   also rust-doc and the peer libraries for tools/bench_*.py
set -euo pipefail
cd "$(dirname "$0")/.."

# gcc builds the proxy's C scanner (proxy_addon/_fastscan.c; pure Python without it, but slower)
packages=(wget python3.11-doc postgresql-doc-15 chromium chromium-driver gcc)
if ! python3 -c 'import os, sysconfig; raise SystemExit(not os.path.exists(sysconfig.get_paths()["include"] + "/Python.h"))'; then
    packages+=(python3-dev)
fi
# Java 17+ for Spark (pyspark 4: rankstore rank --engine spark, tests/test_spark.py), where the machine lacks one
java_major() {
    java -version 2>&1 | sed -n 's/.*version "\([0-9]*\)\.\{0,1\}\([0-9]*\).*/\1 \2/p' | head -1 |
        awk '{ print ($1 == 1 ? $2 : $1) }'
}
if ! command -v java >/dev/null 2>&1 || [[ "$(java_major)" -lt 17 ]]; then
    packages+=(default-jre-headless)
fi
extras="test"
if [[ "${1:-}" == "--bench" ]]; then
    packages+=(rust-doc)
    extras="test,bench"
fi

missing=()
for package in "${packages[@]}"; do
    dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if ((${#missing[@]})); then
    echo "setup: installing ${missing[*]}" >&2
    SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [[ ! -x .venv/bin/python ]]; then
    python3 -m venv .venv
fi
# every C module's source in the stamp: an editable install builds them once, and a changed one must build again
stamp=".venv/.installed-$(cat pyproject.toml setup.py proxy_addon/*.c proxy_addon/*.h rankstore/*.c rankstore/*/*.c | sha1sum | cut -c1-12)-$extras"
if [[ ! -f "$stamp" ]]; then
    echo "setup: installing Python packages into .venv" >&2
    .venv/bin/pip install -q --disable-pip-version-check -e ".[$extras]"
    rm -f .venv/.installed-*
    touch "$stamp"
fi
# the package's own bytecode, once: an editable install writes none, and where PYTHONDONTWRITEBYTECODE is set no
# run would, so that every start of the proxy and of its workers compiled rankstore and proxy_addon again
.venv/bin/python -m compileall -q -j 0 rankstore proxy_addon >/dev/null
