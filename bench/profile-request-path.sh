#!/usr/bin/env bash
# The main thread's CPU per request on the request path, the way issue #19
# measures it: a real server (`ROOT/dist/src/cli.js serve` on ROOT/models)
# under `node --cpu-prof`, loaded by h2load (Debian's nghttp2-client) with
# `-c 4 -m 16 -t 1` on one model, the profile cut to the measured window and
# divided by the requests the server counted as successes in it
# (bench/report/cpu-profile.ts). Needs h2load, curl and python3.
#
#   bench/profile-request-path.sh [ROOT] [MODEL] [SECONDS] [OUT_DIR]
#
# ROOT defaults to this checkout (built: npm run build:ts); pointing it at
# another built checkout (a git worktree of an older commit) profiles that one
# with the same load and the same analysis.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
root="$(cd "${1:-$here}" && pwd)"
model="${2:-ctr_mlp}"
seconds="${3:-5}"
out="${4:-$(mktemp -d)}"
mkdir -p "$out"
for tool in h2load curl python3; do command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 2; }; done

grpc_port=$((20000 + RANDOM % 20000)); http_port=$((grpc_port + 1))
# A copy of a sample model under another name (ctr_mlp_nb, say) takes the
# sample's request shape: HOTPATH_PROFILE_SHAPE=ctr_mlp.
node "$here/dist/bench/load/write-request-body.js" "${HOTPATH_PROFILE_SHAPE:-$model}" "$out/body.bin" "$model"
node --cpu-prof --cpu-prof-dir="$out" "$root/dist/src/cli.js" serve --model-repository "$root/models" \
  --grpc-port "$grpc_port" --http-port "$http_port" --allow-metrics=false >"$out/server.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do
  curl -sf "http://127.0.0.1:$http_port/v2/health/ready" >/dev/null && break
  sleep 0.5
done
curl -sf "http://127.0.0.1:$http_port/v2/health/ready" >/dev/null || { echo "server not ready; see $out/server.log" >&2; exit 1; }

load() {
  # HOTPATH_PROFILE_LOAD overrides the load (e.g. "-c 1 -m 1" for the one-stream figure).
  h2load ${HOTPATH_PROFILE_LOAD:--c 4 -m 16} -t 1 -D "$1" -d "$out/body.bin" \
    -H 'content-type: application/grpc' -H 'te: trailers' \
    "http://127.0.0.1:$grpc_port/inference.GRPCInferenceService/ModelInfer"
}
successes() {
  curl -sf "http://127.0.0.1:$http_port/v2/models/$model/stats" |
    python3 -c 'import json,sys; print(sum(s["inference_stats"]["success"]["count"] for s in json.load(sys.stdin)["model_stats"]))'
}
monotonic_us() { python3 -c 'import time; print(int(time.monotonic() * 1e6))'; }

load 2 >/dev/null   # warm-up: JIT and batch sizes settle
before=$(successes); from=$(monotonic_us)
load "$seconds" >"$out/h2load.txt"
to=$(monotonic_us); after=$(successes)
kill -INT "$server"; wait "$server" || true
trap - EXIT
requests=$((after - before))
# Workers write profiles too (--cpu-prof applies to every thread): the main
# thread's is the one whose thread id (the field after the pid) is 0.
profile=$(ls "$out"/CPU.*."$server".0.*.cpuprofile | head -1)
grep -E 'finished in|requests:|status codes' "$out/h2load.txt"
echo "server successes in the window: $requests"
node "$here/dist/bench/report/cpu-profile.js" "$profile" --requests "$requests" --from "$from" --to "$to" --top "${HOTPATH_PROFILE_TOP:-40}"
