#!/usr/bin/env bash
# Quick start, command 1: install what is missing, build, and run kpl's job on
# the inputs shipped in inputs/: `kpl info`, the self-check of the kernels on
# every enabled backend, batched NNLS and the waveform deconvolution.
# Settings: see scripts/common_build.sh.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common_build.sh"
kpl_configure_and_build
export OMP_PROC_BIND=${OMP_PROC_BIND:-spread} OMP_PLACES=${OMP_PLACES:-threads}
kpl="$KPL_BUILD_DIR/algorithms/kpl"
"$kpl" info
"$kpl" self-check --input "$kpl_root/inputs/self_check.h5" \
  --output "$KPL_BUILD_DIR/self_check_report.h5"
echo "report written to $KPL_BUILD_DIR/self_check_report.h5"
"$kpl" nnls --input "$kpl_root/inputs/nnls_gauss_small.h5" \
  --output "$KPL_BUILD_DIR/nnls_gauss_small_x.h5"
"$kpl" deconv --input "$kpl_root/inputs/deconv_lvis_small.h5" \
  --output "$KPL_BUILD_DIR/deconv_lvis_small_x.h5"
