#!/usr/bin/env bash
# Quick start, command 1: install what is missing, build, and run kpl's job on
# the inputs shipped in inputs/: `kpl info`, the self-check of the kernels on
# every enabled backend, batched NNLS, the waveform deconvolution (and an LVIS
# Level-1B file's returns, with a plot of chosen shots) and a boosted GAM
# (fit, predict, and a plot of its partial effects); with MPI, the
# deconvolution and the GAM fit again on two ranks.
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
"$kpl" gam fit --input "$kpl_root/inputs/gam_small.h5" --output "$KPL_BUILD_DIR/gam_small_model.h5"
"$kpl" gam predict --model "$KPL_BUILD_DIR/gam_small_model.h5" \
  --input "$kpl_root/inputs/gam_small.h5" --output "$KPL_BUILD_DIR/gam_small_prediction.h5"
plot_python=$(kpl_python_with h5py matplotlib)
if [ -n "$plot_python" ]; then
  "$plot_python" "$kpl_root/scripts/plot_gam_effects.py" --kpl "$kpl" \
    --model "$KPL_BUILD_DIR/gam_small_model.h5" --data "$kpl_root/inputs/gam_small.h5" \
    --output "$KPL_BUILD_DIR/gam_small_effects.png"
  # An LVIS Level-1B file (release 1.04, 528 samples) with known returns,
  # deconvolved, and chosen shots drawn as a lidar user reads them: received
  # waveform, fit and returns against elevation.
  "$plot_python" "$kpl_root/scripts/make_lvis.py" --layout 1.04 --shots 200 --seed 2027 \
    --output "$KPL_BUILD_DIR/lvis_l1b_small.h5" --truth "$KPL_BUILD_DIR/lvis_l1b_small_truth.h5"
  "$kpl" deconv --input "$KPL_BUILD_DIR/lvis_l1b_small.h5" \
    --output "$KPL_BUILD_DIR/lvis_l1b_small_returns.h5"
  "$plot_python" "$kpl_root/scripts/plot_waveforms.py" --input "$KPL_BUILD_DIR/lvis_l1b_small.h5" \
    --result "$KPL_BUILD_DIR/lvis_l1b_small_returns.h5" --shots 0,7,42,199 \
    --output "$KPL_BUILD_DIR/lvis_l1b_small_waveforms.png"
else
  echo "python3 with h5py and matplotlib not found: partial-effect plot and LVIS example skipped"
fi
# The same deconvolution and GAM fit on two MPI ranks, when kpl was built with
# MPI (KPL_ENABLE_MPI): one output file, the same datasets. OpenMPI refuses
# root unless told; the variables are set for these two commands only.
if grep -q '^KPL_ENABLE_MPI:BOOL=ON' "$KPL_BUILD_DIR/CMakeCache.txt" 2>/dev/null; then
  mpi_env=(env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
           OMPI_MCA_rmaps_base_oversubscribe=1 OMP_NUM_THREADS=1 OMP_PROC_BIND=false)
  "${mpi_env[@]}" mpiexec -n 2 "$kpl" deconv --input "$kpl_root/inputs/deconv_lvis_small.h5" \
    --output "$KPL_BUILD_DIR/deconv_lvis_small_x_2ranks.h5"
  "${mpi_env[@]}" mpiexec -n 2 "$kpl" gam fit --input "$kpl_root/inputs/gam_small.h5" \
    --output "$KPL_BUILD_DIR/gam_small_model_2ranks.h5"
fi
