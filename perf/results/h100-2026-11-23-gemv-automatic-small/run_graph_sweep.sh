#!/bin/bash
# Session 2026-11-23 (fourth): small shapes timed as CUDA-graph replays (no host launch cost):
# every strategy, and the partial-rows rows_per_team sweep; 5 repetitions, medians.
P=/tmp/payload; mkdir -p $P; tar xJf .device/payload7.tar.xz -C $P
export LD_LIBRARY_PATH=$P/lib:$(dirname $(find / -name 'libcublas.so.13*' 2>/dev/null | head -1)):/usr/local/cuda/lib64
B=$P/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/device.txt
F='gemv_graph/N/(float|double)/[^/]+/Cuda/|gemv_graph/T/(float|double)/(automatic|team-per-dot|partial-rows|kokkos-kernels)/Cuda/|gemv_tuning/T/.*/partial-rows/Cuda/.*rows_per_team:(1|2|4|8)/'
timeout 400 $B/kpl_gemv_benchmark --benchmark_min_time=0.005 --benchmark_repetitions=5 \
  --benchmark_report_aggregates_only=true --benchmark_filter="$F" --benchmark_out=$OUT/graph.json --benchmark_out_format=json 2>&1 | grep -E "_median|rror" | awk '{print $1,$2,$3}' > $OUT/graph_median.txt
wc -l < $OUT/graph_median.txt; grep -i error $OUT/graph_median.txt | head
