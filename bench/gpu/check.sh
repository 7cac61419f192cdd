#!/usr/bin/env bash
# The device check (issue 9, item 7): the one script a GPU node runs. It needs
# CMake, a C++20 compiler and nvcc; Node is optional. Steps:
#   1. versions: driver (nvidia-smi), toolkit (nvcc); fails at once, with a
#      clear message, when the driver is older than the toolkit
#   2. cuBLAS: the Python `nvidia-cublas` wheel's lib dir goes into
#      HOTPATH_CUBLAS_PATH (the executor dlopens cuBLAS; without it the own
#      SGEMM runs)
#   3. configure + build (Release -O2, CUDA ON, tests + benchmarks, ninja)
#      only the targets used below
#   4. ctest -L gpu (sequential: the tests measure device memory; each
#      test's time limit is its TIMEOUT property, which ctest's --timeout
#      does not override, so it is set at configure time:
#      -DHOTPATH_GPU_TEST_TIMEOUT)
#   5. executor_check: driver/runtime versions, device vs host results on
#      every sample model (plans from bench/gpu/plans/, see README.md) and on
#      generated MLPs, the scoring benchmark (batch 1..1024, ranker_mlp and a
#      4 x 1024 MLP generated on the node), cudaMemGetInfo after unload;
#      then which GEMM ran, with a loud warning when cuBLAS was not tested
#   6. arena_bench (the arena against cudaMalloc/cudaFree)
#   7. `npm run bench -- gpu` (executor vs onnxruntime on CPU), only when a
#      node binary is found (HOTPATH_NODE or PATH) with dist/ and
#      node_modules; otherwise recorded as skipped, with the reason
# Everything is merged into BUILD_DIR/gpu-check.json (printed at the end and
# copied to $OUT when set, with the log). Exit status 0 only when every step
# passed.
#
#   bash bench/gpu/check.sh [BUILD_DIR]          (default: build-gpu)
#
# Environment:
#   HOTPATH_CHECK_ALLOW_NO_DEVICE=1  dry run on a machine without a GPU:
#                 CUDA AUTO, skipped GPU tests and "device": "none" pass,
#                 quick benchmarks. Proves every non-device step.
#   HOTPATH_CHECK_CUDA=ON|AUTO|OFF   override the CUDA build (default ON;
#                 dry run AUTO)
#   HOTPATH_CHECK_PLANS=DIR          plan files (default bench/gpu/plans)
#   HOTPATH_CHECK_QUICK=1            quick benchmarks on a GPU node too
#   HOTPATH_CUDA_ARCHITECTURES=...   CMAKE_CUDA_ARCHITECTURES (default: the
#                 device's compute capability from nvidia-smi, e.g. 90-real)
#   HOTPATH_NODE=/path/to/node       the node binary for step 7 (OUT/run.sh
#                 sets it to the packed Node; without it, `node` on PATH)
#   HOTPATH_GPU_TEST_TIMEOUT=S       per-test limit of the gpu CTests (180)
#   HOTPATH_CHECK_NPM_BENCH=0        skip step 7 (OUT/run.sh does: its server
#                 check measures the executor against onnxruntime itself)
# The JSON's commit is the pack's COMMIT file when there is one (an unpacked
# pack may sit inside some other git checkout), else git's HEAD.
# Run by `sh`: start again under bash (this line is the last one sh must read).
if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-"$root/build-gpu"}
mkdir -p "$build" || exit 1
build=$(cd "$build" && pwd)
log="$build/gpu-check.log"
# This run's outputs only: nothing left from an earlier run may be merged or copied.
rm -f "$build"/{gpu-check.json,configure.log,build.log,ctest-gpu.log,executor-check.json,executor-check.out} \
  "$build"/{executor-check.err,arena-bench.json,arena-bench.err,bench-gpu.json,bench-gpu.out}
: >"$log"
jobs=$(nproc 2>/dev/null || echo 4)
dry_run=${HOTPATH_CHECK_ALLOW_NO_DEVICE:-0}
[ "$dry_run" = 1 ] || dry_run=0
plans=${HOTPATH_CHECK_PLANS:-"$root/bench/gpu/plans"}
quick=${HOTPATH_CHECK_QUICK:-$dry_run}
gpu_test_timeout=${HOTPATH_GPU_TEST_TIMEOUT:-180}
warnings=()   # loud, but not failures (e.g. cuBLAS not tested)
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
t0=$(date +%s)

# --- JSON helpers (no jq or python needed) -------------------------------------
json_str() {  # a JSON string literal
  local s=$1
  s=${s//\\/\\\\}
  s=${s//\"/\\\"}
  s=${s//$'\n'/\\n}
  s=${s//$'\r'/\\r}
  s=${s//$'\t'/\\t}
  s=$(printf '%s' "$s" | tr -d '\000-\010\013\014\016-\037')
  printf '"%s"' "$s"
}
# The file's JSON object, or null when it is missing or not one.
json_file() {
  local file=$1
  if [ ! -s "$file" ]; then printf 'null'; return; fi
  if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$file" 2>/dev/null || { printf 'null'; return; }
  else
    case $(head -c 1 "$file") in "{") ;; *) printf 'null'; return ;; esac
  fi
  cat "$file"
}

steps=()      # one JSON object per step
failures=()   # one sentence per failed step
say() { printf '%s\n' "$*" | tee -a "$log"; }
# step NAME OK(0|1) RC SECONDS DETAIL
record() {
  steps+=("{\"name\":$(json_str "$1"),\"ok\":$([ "$2" = 1 ] && echo true || echo false),\"rc\":$3,\"seconds\":$4,\"detail\":$(json_str "$5")}")
  if [ "$2" = 1 ]; then say "   ok: $1 ($4 s) $5"; else failures+=("$1: $5"); say "   FAILED: $1 ($4 s) $5"; fi
}
now() { date +%s; }

# --- 1. versions -----------------------------------------------------------------
say "== versions"
gpu_name="" driver_version="" driver_cuda="" compute_cap="" nvcc_release=""
have_smi=0
if command -v nvidia-smi >/dev/null 2>&1; then
  have_smi=1
  # One query per field: an older driver without compute_cap still answers the rest.
  smi() { nvidia-smi --query-gpu="$1" --format=csv,noheader 2>>"$log" | head -n 1 | sed 's/^ *//;s/ *$//'; }
  gpu_name=$(smi name)
  driver_version=$(smi driver_version)
  compute_cap=$(smi compute_cap | tr -cd '0-9.')
  driver_cuda=$(nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9.]*\).*/\1/p' | head -n 1)
fi
nvcc_bin=$(command -v nvcc || { [ -x /usr/local/cuda/bin/nvcc ] && echo /usr/local/cuda/bin/nvcc; } || true)
[ -n "$nvcc_bin" ] && nvcc_release=$("$nvcc_bin" --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\),.*/\1/p')
say "   GPU: ${gpu_name:-none}, driver ${driver_version:-none} (CUDA ${driver_cuda:-none}), compute capability ${compute_cap:-?}"
say "   nvcc: ${nvcc_bin:-none} (CUDA ${nvcc_release:-none}), cmake $(cmake --version 2>/dev/null | head -n 1 | awk '{print $3}'), $(uname -m), $jobs cores"
versions="{\"gpu\":$(json_str "$gpu_name"),\"driver\":$(json_str "$driver_version"),\"driver_cuda\":$(json_str "$driver_cuda"),\"compute_capability\":$(json_str "$compute_cap"),\"nvcc\":$(json_str "$nvcc_release"),\"cores\":$jobs}"
# "13.0" -> 13000, as cudaDriverGetVersion counts.
cuda_number() { awk -F. '{ printf "%d", $1 * 1000 + $2 * 10 }' <<<"$1"; }
version_ok=1
if [ -n "$driver_cuda" ] && [ -n "$nvcc_release" ] && [ "$(cuda_number "$driver_cuda")" -lt "$(cuda_number "$nvcc_release")" ]; then
  version_ok=0
  record versions 0 1 0 "the driver ($driver_version) supports CUDA $driver_cuda, older than the toolkit (nvcc $nvcc_release): programs built here cannot run; install a driver for CUDA $nvcc_release or newer, or use an older toolkit"
elif [ "$have_smi" = 1 ] && [ -z "$gpu_name" ] && [ "$dry_run" != 1 ]; then
  version_ok=0
  record versions 0 1 0 "no GPU: nvidia-smi lists none (HOTPATH_CHECK_ALLOW_NO_DEVICE=1 for a dry run)"
else
  # Without nvidia-smi, executor_check reports the versions and requires the device.
  record versions 1 0 0 "driver CUDA ${driver_cuda:-unknown (no nvidia-smi)}, toolkit ${nvcc_release:-none}"
fi

# --- 2. cuBLAS from the Python wheel ------------------------------------------------
cublas_dir=""
if command -v python3 >/dev/null 2>&1; then
  cublas_dir=$(python3 - <<'EOF' 2>/dev/null
import importlib.util, os
for name in ("nvidia.cublas", "nvidia.cu13"):
    try:
        spec = importlib.util.find_spec(name)
    except Exception:
        continue
    for base in (spec.submodule_search_locations or []) if spec else []:
        lib = os.path.join(base, "lib")
        if os.path.isdir(lib) and any(f.startswith("libcublas.so") for f in os.listdir(lib)):
            print(lib)
            raise SystemExit
EOF
  )
fi
if [ -n "$cublas_dir" ]; then
  export HOTPATH_CUBLAS_PATH="$cublas_dir${HOTPATH_CUBLAS_PATH:+:$HOTPATH_CUBLAS_PATH}"
  say "   cuBLAS: $cublas_dir"
else
  say "   cuBLAS: no nvidia-cublas wheel found (the executor's own SGEMM runs, or its default search)"
fi

# --- 3. configure and build -------------------------------------------------------
cuda_mode=${HOTPATH_CHECK_CUDA:-$([ "$dry_run" = 1 ] && echo AUTO || echo ON)}
arch_flag=()
arch=${HOTPATH_CUDA_ARCHITECTURES:-}
if [ -z "$arch" ] && [ -n "$compute_cap" ]; then arch="${compute_cap/./}-real"; fi
[ -n "$arch" ] && arch_flag=("-DCMAKE_CUDA_ARCHITECTURES=$arch")
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
if [ -n "$nvcc_bin" ] && [ -z "${CUDACXX:-}" ] && ! command -v nvcc >/dev/null 2>&1; then export CUDACXX=$nvcc_bin; fi

built=0
if [ "$version_ok" = 1 ]; then
  say "== configure ($build, CUDA $cuda_mode${arch:+, architectures $arch})"
  s=$(now)
  cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG" \
    "-DHOTPATH_CUDA=$cuda_mode" -DHOTPATH_BUILD_TESTS=ON -DHOTPATH_BUILD_BENCH=ON "${arch_flag[@]}" \
    "-DHOTPATH_GPU_TEST_TIMEOUT=$gpu_test_timeout" \
    >"$build/configure.log" 2>&1
  rc=$?
  if [ $rc -ne 0 ]; then
    tail -n 30 "$build/configure.log" | tee -a "$log"
    record configure 0 $rc $(( $(now) - s )) "cmake failed (HOTPATH_CUDA=$cuda_mode needs nvcc); see configure.log"
  else
    cuda_on=$(sed -n 's/.*CUDA backend \(ON\|OFF\).*/\1/p' "$build/configure.log" | head -n 1)
    record configure 1 0 $(( $(now) - s )) "CUDA backend ${cuda_on:-?}"
    say "== build (-j$jobs)"
    s=$(now)
    # Only what runs below: the gpu-labelled tests, executor_check, arena_bench.
    gpu_tests=$(ctest --test-dir "$build" -N -L gpu 2>/dev/null | sed -n 's/^ *Test *#[0-9]*: *\([A-Za-z0-9_]*\).*/\1/p' | tr '\n' ' ')
    # shellcheck disable=SC2086
    cmake --build "$build" --parallel "$jobs" --target executor_check arena_bench $gpu_tests >"$build/build.log" 2>&1
    rc=$?
    if [ $rc -ne 0 ]; then
      grep -E 'error|Error' "$build/build.log" | head -n 20 | tee -a "$log"
      record build 0 $rc $(( $(now) - s )) "build failed; see build.log"
    else
      built=1
      record build 1 0 $(( $(now) - s )) "targets: executor_check arena_bench ${gpu_tests:-(no gpu tests: CUDA off)}"
    fi
  fi
fi

# --- 4. ctest -L gpu ---------------------------------------------------------------
ctest_json=null
if [ "$built" = 1 ]; then
  say "== ctest -L gpu"
  s=$(now)
  # No --timeout: it only applies to tests without a TIMEOUT property, and
  # every test has one (HOTPATH_GPU_TEST_TIMEOUT, set at configure).
  ctest --test-dir "$build" -L gpu --output-on-failure >"$build/ctest-gpu.log" 2>&1
  rc=$?
  tests=()
  passed=0 failed=0 skipped=0
  while IFS='|' read -r name result secs; do
    [ -z "$name" ] && continue
    case $result in
      Passed) passed=$((passed + 1)) ;;
      *Skipped*|"Not Run"*) skipped=$((skipped + 1)) ;;
      *) failed=$((failed + 1)) ;;
    esac
    tests+=("{\"name\":$(json_str "$name"),\"result\":$(json_str "$result"),\"seconds\":${secs:-0}}")
    say "   $name: $result (${secs:-?} s)"
  done < <(sed -n -E 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) [ .*]*(Passed|Failed|Skipped|Not Run|Timeout|Exception[^0-9]*)? *([0-9.]+)? *sec.*/\1|\2|\3/p' "$build/ctest-gpu.log")
  total=$((passed + failed + skipped))
  ctest_json="{\"rc\":$rc,\"passed\":$passed,\"failed\":$failed,\"skipped\":$skipped,\"tests\":[$(IFS=,; echo "${tests[*]:-}")]}"
  detail="$passed passed, $failed failed, $skipped skipped of $total"
  if [ $rc -ne 0 ] || [ $failed -gt 0 ]; then
    grep -E 'FAIL|Error|error' "$build/ctest-gpu.log" | head -n 20 | tee -a "$log"
    record ctest-gpu 0 $rc $(( $(now) - s )) "$detail"
  elif [ $total -eq 0 ] && [ "$dry_run" != 1 ]; then
    record ctest-gpu 0 $rc $(( $(now) - s )) "no GPU tests (built without CUDA?)"
  elif [ $skipped -gt 0 ] && [ "$dry_run" != 1 ]; then
    record ctest-gpu 0 $rc $(( $(now) - s )) "$detail: skipped means no usable device"
  else
    record ctest-gpu 1 $rc $(( $(now) - s )) "$detail"
  fi
fi

# Which GEMM executor_check ran (its JSON's cuda.gemm), said plainly; a
# device run that did not test cuBLAS gets a loud warning (not a failure:
# the own SGEMM is always there, but production may load cuBLAS).
gemm_summary=""
gemm_report() {
  local file="$build/executor-check.json" sets="" tested="" library="" why=""
  [ -s "$file" ] || return 0
  if command -v python3 >/dev/null 2>&1; then
    IFS='|' read -r sets tested library why < <(python3 -c '
import json, sys
c = json.load(open(sys.argv[1])).get("cuda", {})
g = c.get("gemm", {})
print("|".join([",".join(c.get("kernel_sets", [])) or "none", str(g.get("cublas_tested", False)).lower(),
                g.get("cublas_library", ""), g.get("cublas_not_tested_because", "").replace("|", "/")]))
' "$file" 2>/dev/null)
  else
    sets=$(sed -n 's/.*"kernel_sets":\[\([^]]*\)\].*/\1/p' "$file" | tr -d '"')
    tested=$(sed -n 's/.*"cublas_tested":\(true\|false\).*/\1/p' "$file")
    library=$(sed -n 's/.*"cublas_library":"\([^"]*\)".*/\1/p' "$file")
    why=$(sed -n 's/.*"cublas_not_tested_because":"\([^"]*\)".*/\1/p' "$file")
  fi
  gemm_summary="kernel sets: ${sets:-none}; cuBLAS tested: ${tested:-false}${library:+ ($library)}"
  say "   GEMM: $gemm_summary (own SGEMM: small-m kernels for m <= 16, tiled above)"
  if [ "${tested:-false}" != true ] && [ "$dry_run" != 1 ]; then
    local banner="cuBLAS WAS NOT TESTED on this device: ${why:-unknown}. Only the own SGEMM ran; install the nvidia-cublas wheel (pip install nvidia-cublas) or set HOTPATH_CUBLAS_PATH, and run again."
    warnings+=("$banner")
    say ""
    say "   !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
    say "   !!! WARNING: $banner"
    say "   !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
    say ""
  fi
}

# --- 5. executor_check -------------------------------------------------------------
if [ "$built" = 1 ]; then
  say "== executor_check (plans: $plans)"
  s=$(now)
  # The benchmark skips its remaining points after 90 s: the whole script
  # must finish in under 4 minutes on a 16-core node.
  args=(--json "$build/executor-check.json" --budget-s 90)
  [ -d "$plans" ] && args+=(--plans "$plans")
  # Dry run: a second host kernel set stands in for CUDA, so the device
  # phases' code runs too.
  if [ "$dry_run" = 1 ]; then args+=(--host-as-device); else args+=(--require-device); fi
  [ "$quick" = 1 ] && args+=(--quick)
  "$build/executor_check" "${args[@]}" >"$build/executor-check.out" 2>"$build/executor-check.err"
  rc=$?
  tee -a "$log" <"$build/executor-check.out"
  grep -E '^executor_check: (CUDA driver|bench) ' "$build/executor-check.err" | sed 's/^executor_check: /   /' | tee -a "$log"
  if [ $rc -eq 0 ]; then
    record executor-check 1 0 $(( $(now) - s )) "$(head -n 1 "$build/executor-check.out")"
  else
    record executor-check 0 $rc $(( $(now) - s )) "$(grep -m 3 'FAIL' "$build/executor-check.out" | tr '\n' ' ')"
  fi
  [ -d "$plans" ] || say "   note: no $plans: only the generated models ran (README.md: export the plans and carry them)"
  gemm_report
fi

# --- 6. arena_bench ----------------------------------------------------------------
if [ "$built" = 1 ]; then
  say "== arena_bench"
  s=$(now)
  bench_args=()
  [ "$quick" = 1 ] && bench_args+=(--quick)
  "$build/arena_bench" "${bench_args[@]}" >"$build/arena-bench.json" 2>"$build/arena-bench.err"
  rc=$?
  if [ $rc -eq 0 ]; then
    field() { sed -n "s/.*\"$1\":\"\{0,1\}\([^,\"}]*\).*/\1/p" "$build/arena-bench.json"; }
    record arena-bench 1 0 $(( $(now) - s )) "$(field backend): p50 $(field alloc_free_p50_ns) ns vs $(field baseline) $(field baseline_alloc_free_p50_ns) ns ($(field speedup_p50)x)"
  else
    tail -n 5 "$build/arena-bench.err" | tee -a "$log"
    record arena-bench 0 $rc $(( $(now) - s )) "arena_bench exited $rc"
  fi
fi

# --- 7. npm run bench -- gpu (only with Node) --------------------------------------
node_bin=${HOTPATH_NODE:-$(command -v node || true)}
npm_json=null
if [ "$version_ok" != 1 ]; then
  npm_skip="the version check failed"
elif [ "${HOTPATH_CHECK_NPM_BENCH:-1}" = 0 ]; then
  npm_skip="HOTPATH_CHECK_NPM_BENCH=0 (OUT/run.sh measures the executor against onnxruntime in its server check)"
elif [ -z "$node_bin" ] || [ ! -x "$node_bin" ]; then
  npm_skip="no node binary (set HOTPATH_NODE or put node on PATH)"
elif [ ! -f "$root/dist/bench/run.js" ]; then
  npm_skip="no dist/bench/run.js (run npm run build where Node is and carry dist/)"
elif [ ! -d "$root/node_modules/onnxruntime-node" ]; then
  npm_skip="no node_modules/onnxruntime-node (carry the production node_modules)"
else
  npm_skip=""
  say "== npm run bench -- gpu ($node_bin)"
  s=$(now)
  npm_args=(gpu --json "$build/bench-gpu.json")
  [ "$quick" = 1 ] && npm_args+=(--quick)
  (cd "$root" && "$node_bin" dist/bench/run.js "${npm_args[@]}") >"$build/bench-gpu.out" 2>&1
  rc=$?
  grep -v '^{' "$build/bench-gpu.out" | tail -n 16 | cut -c1-240 | tee -a "$log"
  if [ $rc -eq 0 ]; then
    record npm-bench-gpu 1 0 $(( $(now) - s )) "bench-gpu.json"
    npm_json=$(json_file "$build/bench-gpu.json")
  else
    record npm-bench-gpu 0 $rc $(( $(now) - s )) "node dist/bench/run.js gpu exited $rc"
  fi
fi
[ -n "$npm_skip" ] && say "== npm run bench -- gpu: skipped: $npm_skip" && npm_json="{\"skipped\":$(json_str "$npm_skip")}"

# --- merge ---------------------------------------------------------------------------
elapsed=$(( $(now) - t0 ))
ok=true
[ ${#failures[@]} -eq 0 ] || ok=false
failures_json=()
for f in "${failures[@]+"${failures[@]}"}"; do failures_json+=("$(json_str "$f")"); done
warnings_json=()
for w in "${warnings[@]+"${warnings[@]}"}"; do warnings_json+=("$(json_str "$w")"); done
out="$build/gpu-check.json"
mode=device
[ "$dry_run" = 1 ] && mode=dry-run
{
  printf '{"check":"hotpath-gpu-check","ok":%s,"mode":%s,"started":%s,"elapsed_s":%s,' \
    "$ok" "$(json_str "$mode")" "$(json_str "$started")" "$elapsed"
  printf '"commit":%s,"versions":%s,"cublas_path":%s,' \
    "$(json_str "$(cat "$root/COMMIT" 2>/dev/null || git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)")" "$versions" "$(json_str "$cublas_dir")"
  printf '"steps":[%s],"failures":[%s],"warnings":[%s],"gemm":%s,' "$(IFS=,; echo "${steps[*]:-}")" \
    "$(IFS=,; echo "${failures_json[*]:-}")" "$(IFS=,; echo "${warnings_json[*]:-}")" "$(json_str "$gemm_summary")"
  printf '"ctest_gpu":%s,"executor_check":%s,"arena_bench":%s,"npm_bench_gpu":%s}\n' \
    "$ctest_json" "$(json_file "$build/executor-check.json")" "$(json_file "$build/arena-bench.json")" "$npm_json"
} >"$out"
if command -v python3 >/dev/null 2>&1 && ! python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$out" 2>>"$log"; then
  say "warning: $out is not valid JSON (a bug in check.sh)"
  ok=false
fi
if [ -n "${OUT:-}" ] && mkdir -p "$OUT" 2>/dev/null; then
  cp "$out" "$OUT/gpu-check.json" && cp "$log" "$OUT/gpu-check.log"
  for f in executor-check.err ctest-gpu.log build.log; do [ -f "$build/$f" ] && cp "$build/$f" "$OUT/$f"; done
fi
say "== done in ${elapsed}s: $([ "$ok" = true ] && echo PASSED || echo "FAILED (${#failures[@]}: ${failures[*]+"${failures[*]}"})")"
for w in "${warnings[@]+"${warnings[@]}"}"; do say "WARNING: $w"; done
say "results: $out${OUT:+ (copied to $OUT)}"
[ "$ok" = true ]
