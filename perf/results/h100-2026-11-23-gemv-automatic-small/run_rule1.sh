#!/bin/bash
# Session 2026-11-23 (fourth): the new automatic rule and 2-row blocks for short T dot products.
# Cuda tests, memcheck/racecheck of the automatic and partial-rows tests, then the small grid:
# every strategy, 10 repetitions randomly interleaved (medians); the 1e6 shapes once.
P=/tmp/payload; mkdir -p $P; tar xJf .device/payload6.tar.xz -C $P
export LD_LIBRARY_PATH=$P/lib:$(dirname $(find / -name 'libcublas.so.13*' 2>/dev/null | head -1)):/usr/local/cuda/lib64
B=$P/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/device.txt
$B/kpl_gemv_test --gtest_filter='*Cuda*' 2>&1 | grep -E "^\[  (PASSED|FAILED)|FAILED|tests from.*ran" | tee $OUT/gemv_test.txt
S=/usr/local/cuda/bin/compute-sanitizer
timeout 150 $S --tool memcheck --print-limit 5 $B/kpl_gemv_test --gtest_filter='*Cuda.Automatic*:*Cuda.PartialRows*:*Cuda.Batched*' 2>&1 | grep -E "ERROR SUMMARY|PASSED|FAILED|tests from.*ran" | tee $OUT/memcheck.txt
timeout 100 $S --tool racecheck --print-limit 5 $B/kpl_gemv_test --gtest_filter='*Cuda.AutomaticDouble:*Cuda.PartialRowsFloat' 2>&1 | grep -E "RACECHECK SUMMARY|PASSED|FAILED|tests from.*ran" | tee $OUT/racecheck.txt
F='gemv_stream/N/(float|double)/[^/]+/Cuda/rows:(1000|10000|100000)/columns:(16|32|64)/|gemv_stream/T/(float|double)/(automatic|team-per-dot|partial-rows|kokkos-kernels)/Cuda/rows:(1000|10000|100000)/columns:(16|32|64)/'
timeout 200 $B/kpl_gemv_benchmark --benchmark_min_time=0.002 --benchmark_repetitions=10 --benchmark_enable_random_interleaving=true \
  --benchmark_report_aggregates_only=true --benchmark_filter="$F" --benchmark_out=$OUT/small.json --benchmark_out_format=json 2>&1 | grep "_median" | awk '{print $1,$2,$3}' > $OUT/small_median.txt
wc -l < $OUT/small_median.txt
timeout 100 $B/kpl_gemv_benchmark --benchmark_min_time=0.05 --benchmark_filter='gemv_stream/(T|N)/(float|double)/(automatic|partial-rows|kokkos-kernels)/Cuda/rows:1000000/|gemv_stacked/T/(float|double)/(automatic|kokkos-kernels)/Cuda' 2>&1 | grep "^gemv" | awk '{print $1,$2,$3}' | tee $OUT/large.txt
