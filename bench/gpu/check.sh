#!/bin/sh
# GPU checks for a machine with a CUDA device, CMake, a C++20 compiler and
# nvcc, but no Node: builds the native tests and benchmark with plain CMake,
# runs every GPU-tagged CTest test (arena invariants on device and pinned
# memory, cudaMemGetInfo back to baseline; device probing) and the arena
# benchmark (cudaMalloc/cudaFree as the baseline), then prints a table.
#
#   sh bench/gpu/check.sh [BUILD_DIR]        (default: build-gpu)
#
# Exit code: 0 when every GPU test passed (none skipped) and the benchmark
# ran; 1 otherwise. The benchmark JSON is left in BUILD_DIR/arena-bench.json.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-"$root/build-gpu"}
jobs=$(nproc 2>/dev/null || echo 4)
generator=""
command -v ninja >/dev/null 2>&1 && generator="-G Ninja"

echo "== configure ($build)"
# shellcheck disable=SC2086
cmake -S "$root" -B "$build" $generator -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG" \
  -DHOTPATH_CUDA=ON -DHOTPATH_BUILD_TESTS=ON -DHOTPATH_BUILD_BENCH=ON >"$build.configure.log" 2>&1 \
  || { tail -n 40 "$build.configure.log"; echo "configure failed (HOTPATH_CUDA=ON needs nvcc)"; exit 1; }
echo "== build"
cmake --build "$build" --parallel "$jobs" >"$build.build.log" 2>&1 || { tail -n 60 "$build.build.log"; echo "build failed"; exit 1; }

echo "== ctest -L gpu"
ctest --test-dir "$build" -L gpu --output-on-failure >"$build.ctest.log" 2>&1
ctest_rc=$?
cat "$build.ctest.log"

echo "== arena benchmark"
"$build/arena_bench" >"$build/arena-bench.json" 2>"$build.bench.log"
bench_rc=$?
[ $bench_rc -ne 0 ] && cat "$build.bench.log"

# One field of the benchmark JSON (flat numbers and strings only).
field() { sed -n "s/.*\"$1\":\"\{0,1\}\([^,\"}]*\).*/\1/p" "$build/arena-bench.json"; }

echo
echo "results"
printf '  %-44s %s\n' "test" "result"
grep -E '^ *[0-9]+/[0-9]+ Test +#' "$build.ctest.log" | sed -E 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) [ .*]*(Passed|\*\*\*Failed|\*\*\*Skipped|Not Run|\*\*\*Exception.*|Skipped)?.*/\1 \2/' \
  | while read -r name result; do printf '  %-44s %s\n' "$name" "${result:-see log}"; done
if [ $bench_rc -eq 0 ]; then
  printf '  %-44s %s\n' "backend" "$(field backend) ($(field device))"
  printf '  %-44s %s ns / %s ns\n' "arena alloc+free p50 / p99" "$(field alloc_free_p50_ns)" "$(field alloc_free_p99_ns)"
  printf '  %-44s %s ns / %s ns\n' "$(field baseline) p50 / p99" "$(field baseline_alloc_free_p50_ns)" "$(field baseline_alloc_free_p99_ns)"
  printf '  %-44s %sx (target >= 100x on a GPU)\n' "baseline / arena (p50)" "$(field speedup_p50)"
  printf '  %-44s %s\n' "replay backend calls per 1k (steady)" "$(field backend_calls_steady_per_1k)"
  printf '  %-44s %s\n' "replay external fragmentation peak" "$(field external_frag_peak)"
  printf '  %-44s %s\n' "replay internal fragmentation peak" "$(field internal_frag_peak)"
  printf '  %-44s %s\n' "replay cache overhead peak" "$(field cache_overhead_peak)"
else
  printf '  %-44s %s\n' "arena_bench" "FAILED (exit $bench_rc)"
fi
skipped=$(grep -c 'Test *#.*Skipped' "$build.ctest.log")
[ "$skipped" -gt 0 ] && echo "note: $skipped GPU test(s) skipped: no usable CUDA device?"
[ $ctest_rc -eq 0 ] && [ $bench_rc -eq 0 ] && [ "$skipped" -eq 0 ] && exit 0
exit 1
