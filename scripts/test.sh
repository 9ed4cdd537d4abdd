#!/usr/bin/env bash
# Quick start, command 2: install what is missing, build, and run the whole
# test suite (every test on every enabled backend, the command line, and a
# consumer project built against the installed package).
# Settings: see scripts/common_build.sh; arguments are passed on to ctest.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common_build.sh"
kpl_configure_and_build
cd "$KPL_BUILD_DIR"
ctest --output-on-failure -j "$(nproc)" "$@"
