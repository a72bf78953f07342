#!/usr/bin/env bash
# venv.sh DIR - the project-local Python environment: the ksync tool (editable), pytest, pytest-xdist
# and matplotlib.
set -eu
dir=$1
if [ ! -x "$dir/bin/python" ]; then
	python3 -m venv --system-site-packages "$dir" || {
		echo "ksync: cannot create a Python venv in $dir (apt-get install python3-venv)" >&2; exit 1; }
fi
"$dir/bin/python" -m pip install -q --disable-pip-version-check -e . >/tmp/ksync-pip.log 2>&1 || {
	echo "ksync: pip install -e . failed; see /tmp/ksync-pip.log" >&2; exit 1; }
"$dir/bin/python" -c 'import pytest' 2>/dev/null || \
	"$dir/bin/python" -m pip install -q --disable-pip-version-check 'pytest>=7' >>/tmp/ksync-pip.log 2>&1 || {
	echo "ksync: pip install pytest failed; see /tmp/ksync-pip.log" >&2; exit 1; }
# pytest-xdist: make test runs the suites on every host CPU (-n auto)
"$dir/bin/python" -c 'import xdist' 2>/dev/null || \
	"$dir/bin/python" -m pip install -q --disable-pip-version-check 'pytest-xdist>=3' >>/tmp/ksync-pip.log 2>&1 || {
	echo "ksync: pip install pytest-xdist failed; see /tmp/ksync-pip.log" >&2; exit 1; }
"$dir/bin/python" -c 'import matplotlib' 2>/dev/null || \
	"$dir/bin/python" -m pip install -q --disable-pip-version-check 'matplotlib>=3.6' >>/tmp/ksync-pip.log 2>&1 || {
	echo "ksync: pip install matplotlib failed; see /tmp/ksync-pip.log" >&2; exit 1; }
