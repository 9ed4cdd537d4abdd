#!/bin/bash
# Session 2026-11-23 (fourth): automatic's rule for small shapes: every strategy and the
# partial-rows rows_per_team sweep at n <= 1e5, 3 repetitions each (medians).
P=/tmp/payload; mkdir -p $P; tar xJf .device/payload5.tar.xz -C $P
export LD_LIBRARY_PATH=$P/lib:$(dirname $(find / -name 'libcublas.so.13*' 2>/dev/null | head -1)):/usr/local/cuda/lib64
B=$P/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/device.txt
F='gemv_stream/N/(float|double)/[^/]+/Cuda/rows:(1000|10000|100000)/columns:(16|32|64)/|gemv_stream/T/(float|double)/(automatic|team-per-dot|partial-rows|kokkos-kernels)/Cuda/rows:(1000|10000|100000)/columns:(16|32|64)/|gemv_tuning/T/.*/partial-rows/Cuda/.*rows_per_team:(1|2|4|8)/'
timeout 400 $B/kpl_gemv_benchmark --benchmark_min_time=0.005 --benchmark_repetitions=3 \
  --benchmark_report_aggregates_only=true --benchmark_filter="$F" 2>&1 | grep "_median" | awk '{print $1,$2,$3}' | tee $OUT/small_median.txt | wc -l
