#!/bin/bash
# Session 2026-11-23 (fourth), final kernel (thread_per_row rule added): Cuda tests (gemv, GAM), memcheck of the
# tests, then the small grid as graph replays (every strategy, 5 repetitions, medians), the
# 1e6 and GAM shapes back to back.
P=/tmp/payload; mkdir -p $P; tar xJf .device/payload9.tar.xz -C $P
export LD_LIBRARY_PATH=$P/lib:$(dirname $(find / -name 'libcublas.so.13*' 2>/dev/null | head -1)):/usr/local/cuda/lib64
B=$P/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/device.txt
$B/kpl_gemv_test --gtest_filter='*Cuda*' 2>&1 | grep -E "^\[  (PASSED|FAILED)|FAILED|tests from.*ran" | tee $OUT/gemv_test.txt
$B/kpl_gam_test --gtest_filter='*Cuda*' 2>&1 | grep -E "^\[  (PASSED|FAILED)|FAILED|tests from.*ran" | tee $OUT/gam_test.txt
timeout 120 /usr/local/cuda/bin/compute-sanitizer --tool memcheck --print-limit 5 $B/kpl_gemv_test --gtest_filter='*Cuda.Automatic*' 2>&1 | grep -E "ERROR SUMMARY|PASSED|FAILED|tests from.*ran" | tee $OUT/memcheck.txt
F='gemv_graph/N/(float|double)/[^/]+/Cuda/|gemv_graph/T/(float|double)/(automatic|team-per-dot|partial-rows|kokkos-kernels)/Cuda/'
timeout 200 $B/kpl_gemv_benchmark --benchmark_min_time=0.005 --benchmark_repetitions=5 \
  --benchmark_report_aggregates_only=true --benchmark_filter="$F" --benchmark_out=$OUT/graph.json --benchmark_out_format=json 2>&1 | grep -E "_median|rror" | awk '{print $1,$2,$3}' > $OUT/graph_median.txt
wc -l < $OUT/graph_median.txt
timeout 100 $B/kpl_gemv_benchmark --benchmark_min_time=0.05 --benchmark_filter='gemv_stream/(T|N)/(float|double)/(automatic|kokkos-kernels)/Cuda/rows:(1000000|16384/|100000/columns:6400)|gemv_stacked/T/(float|double)/(automatic|kokkos-kernels)/Cuda' 2>&1 | grep "^gemv" | awk '{print $1,$2,$3}' > $OUT/large.txt
wc -l < $OUT/large.txt
