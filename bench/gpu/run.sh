#!/usr/bin/env bash
# OUT/run.sh: the GPU node check from the carry pack (bench/gpu/pack.sh,
# issue 22). Needs bash, tar, xz (or python3), CMake, a C++20 compiler, and
# on a GPU node nvcc and ninja; no Node: it brings its own.
#
#   bash OUT/run.sh            (from any directory)
#
# 1. unpacks Node, node_modules and the app under HOTPATH_RUN_DIR (default
#    OUT/work; again only when the pack changed);
# 2. puts a directory holding only the packed `node` first on PATH, so every
#    `#!/usr/bin/env node` script (cmake-js, npm, npx if anything calls them)
#    runs on the packed Node, never on a `node` found on the machine; the
#    packed Node itself is called by its full path;
# 3. generates the sample ranker_mlp's weights (dist/models/generate.js);
# 4. builds the addon with cmake-js into app/build-cmake: with CUDA when
#    nvidia-smi lists a GPU, otherwise CPU-only (the host path); the same
#    tree, configured with check.sh's settings, then serves check.sh, which
#    builds only its own targets on top;
# 5. bench/gpu/check.sh (its dry run on the host path), with HOTPATH_NODE set
#    to the packed Node; its Node benchmark step is left to step 6;
# 6. dist/bench/gpu/server-check.js: ranker_mlp through the real server on
#    the executor vs onnxruntime on CPU, the executor alone at batch 1, 64,
#    256, device memory after unloading, an injected device fault;
# 7. merges everything into one JSON, HOTPATH_RUN_DIR/run.json (copied to
#    $OUT when set), and prints PASSED or FAILED with the reasons.
# Exit status 0 only when everything passed. HOTPATH_RUN_STOP_AFTER=node (a
# test hook) stops after step 2.
if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=${HOTPATH_RUN_DIR:-"$here/work"}
mkdir -p "$work" || exit 1
work=$(cd "$work" && pwd)
jobs=$(nproc 2>/dev/null || echo 2)
t0=$(date +%s)
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
log="$work/run.log"
: >"$log"
say() { printf 'run: %s\n' "$*" | tee -a "$log"; }
failures=()
fail() { failures+=("$1"); say "FAILED: $1"; }

# --- 1. unpack ---------------------------------------------------------------------------
# xz through tar when present, else Python's lzma (a GPU node has python3
# for the cuBLAS wheel more often than xz-utils).
unxz_tar() {  # ARCHIVE DEST
  if command -v xz >/dev/null 2>&1; then
    tar -xJf "$1" -C "$2"
  elif command -v python3 >/dev/null 2>&1; then
    python3 -c 'import lzma, sys, tarfile; tarfile.open(fileobj=lzma.open(sys.argv[1])).extractall(sys.argv[2])' "$1" "$2"
  else
    echo "run: needs xz or python3 to unpack $1" >&2
    return 1
  fi
}
stamp=$(cat "$here/PACK.json" 2>/dev/null | cksum | cut -d' ' -f1)
if [ "$(cat "$work/.unpacked" 2>/dev/null)" != "$stamp" ]; then
  say "unpacking into $work"
  rm -rf "$work/node" "$work/app" "$work/.unpacked"
  unxz_tar "$here/node.tar.xz" "$work" && unxz_tar "$here/app.tar.xz" "$work" &&
    unxz_tar "$here/node_modules.tar.xz" "$work/app" || { say "FAILED: unpacking"; exit 1; }
  printf '%s\n' "$stamp" >"$work/.unpacked"
fi
node="$work/node/bin/node"
app="$work/app"

# --- 2. the packed Node first on PATH ------------------------------------------------------
shims="$work/shims"
mkdir -p "$shims"
ln -sf "$node" "$shims/node"
export PATH="$shims:$PATH"
export HOTPATH_NODE="$node"
export npm_config_nodedir="$work/node"  # node-gyp (the addon's fallback build) uses these headers
if ! version=$("$node" --version 2>>"$log"); then fail "the packed Node does not run here"; fi
say "Node ${version:-?} ($node); $(uname -m), $jobs cores"
# Test hook (test/unit/gpu-run-script.test.ts): stop once the packed Node is
# in place, saying which `node` a script would now find.
if [ "${HOTPATH_RUN_STOP_AFTER:-}" = node ]; then
  say "node on PATH: $(command -v node)"
  [ ${#failures[@]} -eq 0 ]
  exit
fi

# --- GPU or host path ----------------------------------------------------------------------
gpu=0
arch=${HOTPATH_CUDA_ARCHITECTURES:-}
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  gpu=1
  if [ -z "$arch" ]; then
    cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -cd '0-9.')
    [ -n "$cap" ] && arch="${cap/./}-real"
  fi
fi
# cmake-js configures before check.sh would point CMake at nvcc: do it here.
if [ "$gpu" = 1 ] && [ -z "${CUDACXX:-}" ] && ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export CUDACXX=/usr/local/cuda/bin/nvcc
fi
mode=$([ "$gpu" = 1 ] && echo device || echo host)
say "path: $mode$([ "$gpu" = 1 ] && echo " (CUDA architectures ${arch:-default})")"

# --- 3. the sample weights ---------------------------------------------------------------------
if [ ${#failures[@]} -eq 0 ]; then
  (cd "$app" && "$node" dist/models/generate.js --missing-only) >>"$log" 2>&1 || fail "generating the sample models"
fi

# --- 4. the addon, in the tree check.sh reuses ---------------------------------------------------
build="$app/build-cmake"
if [ ${#failures[@]} -eq 0 ]; then
  cuda=$([ "$gpu" = 1 ] && echo ON || echo OFF)
  # The settings check.sh configures with, so its reconfigure changes nothing.
  defines=(--CDHOTPATH_CUDA=$cuda --CDHOTPATH_BUILD_TESTS=ON --CDHOTPATH_BUILD_BENCH=ON
           "--CDCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG" --CDHOTPATH_GPU_TEST_TIMEOUT=180)
  [ -n "$arch" ] && defines+=("--CDCMAKE_CUDA_ARCHITECTURES=$arch")
  say "addon: cmake-js (CUDA $cuda) into $build"
  s=$(date +%s)
  # Only the addon here; check.sh builds its own targets in the same tree.
  if (cd "$app" && "$node" node_modules/cmake-js/bin/cmake-js build --out build-cmake --config Release \
        --target hotpath_native "${defines[@]}" --parallel "$jobs") >"$work/addon-build.log" 2>&1; then
    say "   ok ($(( $(date +%s) - s )) s)"
  else
    tail -n 30 "$work/addon-build.log" | tee -a "$log"
    fail "the addon build failed (addon-build.log)"
  fi
fi

# --- 5. check.sh -----------------------------------------------------------------------------------
check_json="$build/gpu-check.json"
if [ ${#failures[@]} -eq 0 ]; then
  say "check.sh ($mode)"
  check_env=(HOTPATH_CHECK_NPM_BENCH=0)
  [ "$gpu" = 1 ] || check_env+=(HOTPATH_CHECK_ALLOW_NO_DEVICE=1 HOTPATH_CHECK_CUDA=OFF)
  [ -n "$arch" ] && check_env+=("HOTPATH_CUDA_ARCHITECTURES=$arch")
  if ! env "${check_env[@]}" bash "$app/bench/gpu/check.sh" "$build" 2>&1 | sed 's/^/   /' | tee -a "$log"; then
    fail "check.sh: $(sed -n 's/.*"failures":\[\([^]]*\)\].*/\1/p' "$check_json" 2>/dev/null | head -c 600)"
  fi
fi

# --- 6. the server ---------------------------------------------------------------------------------
server_json="$work/server-check.json"
rm -f "$server_json"
if [ ${#failures[@]} -eq 0 ] || [ -f "$build/Release/hotpath_native.node" ]; then
  say "server-check"
  quick=()
  [ "$gpu" = 1 ] || quick=(--quick)
  (cd "$app" && "$node" dist/bench/gpu/server-check.js --json "$server_json" ${quick[@]+"${quick[@]}"}) 2>&1 | sed 's/^/   /' | tee -a "$log"
  [ "${PIPESTATUS[0]}" = 0 ] || fail "server-check: $(sed -n 's/.*"failures": *\[\(.*\)/\1/p' "$server_json" 2>/dev/null | head -c 600)"
fi

# --- 7. one JSON -------------------------------------------------------------------------------------
elapsed=$(( $(date +%s) - t0 ))
out_json="$work/run.json"
printf '%s\n' "${failures[@]+"${failures[@]}"}" >"$work/failures.txt"
"$node" -e '
  const fs = require("fs");
  const [out, pack, check, server, failuresFile, mode, started, elapsed] = process.argv.slice(1);
  const read = (f) => { try { return JSON.parse(fs.readFileSync(f, "utf8")); } catch { return null; } };
  const failures = fs.readFileSync(failuresFile, "utf8").split("\n").filter(Boolean);
  const result = { run: "hotpath-gpu-run", ok: failures.length === 0, mode, started, elapsed_s: Number(elapsed),
    pack: read(pack), failures, gpu_check: read(check), server_check: read(server) };
  fs.writeFileSync(out, JSON.stringify(result, null, 1) + "\n");
' "$out_json" "$here/PACK.json" "$check_json" "$server_json" "$work/failures.txt" "$mode" "$started" "$elapsed" \
  2>>"$log" || fail "writing $out_json"
if [ -n "${OUT:-}" ] && mkdir -p "$OUT" 2>/dev/null; then cp "$out_json" "$log" "$OUT/" 2>/dev/null; fi
if [ ${#failures[@]} -eq 0 ]; then
  say "PASSED in ${elapsed}s ($mode path): $out_json"
  exit 0
fi
say "FAILED in ${elapsed}s ($mode path): ${failures[*]}"
say "results: $out_json"
exit 1
