#!/usr/bin/env bash
# Main-thread CPU per request of two builds, alternating, on the same load
# (issue 19): for each round and each ROOT, a fresh server
# (`ROOT/dist/src/cli.js serve --intra-op-threads 1` on this checkout's
# models/ctr_mlp and ranker_mlp) gets 2 s of unmeasured h2load, then SECONDS
# measured with `h2load -c 4 -m 16 -t 1` on MODEL. Printed per run: req/s, the
# server's ModelStatistics successes over the measured run, and the main
# thread's user+system CPU (/proc/PID/task/PID/stat, no profiler) over them.
# Alternating the builds in one run is what makes the comparison fair on a
# shared machine; compare the medians. The whole process's CPU per request
# (every thread) is printed too: with --front-door-threads the transport
# moves to other threads of the same process.
#
# HOTPATH_AB_LOAD: h2load's load flags instead of `-c 4 -m 16 -t 1`.
# HOTPATH_AB_ARGS_A / HOTPATH_AB_ARGS_B: more serve flags for A / B, so one
# build can be compared with itself under two settings, e.g.
#   HOTPATH_AB_ARGS_B='--front-door-threads 2' bench/ab-main-thread-cpu.sh . .
#
# A fixed offered rate (HOTPATH_AB_LOAD="-c 4 -m 16 -t 1 --rps 300": 300
# requests a second per client) gives both builds the same arrivals, so the
# same batch sizes, and on a loaded machine their figures scatter much less
# than at full speed.
#
#   bench/ab-main-thread-cpu.sh ROOT_A ROOT_B [MODEL] [SECONDS] [ROUNDS]
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
a="$(cd "$1" && pwd)"; b="$(cd "$2" && pwd)"
model="${3:-ctr_mlp}"; seconds="${4:-5}"; rounds="${5:-3}"
for tool in h2load curl python3; do command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 2; }; done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/models"
for m in ctr_mlp ranker_mlp; do cp -r "$here/models/$m" "$work/models/"; done
node "$here/dist/bench/load/write-request-body.js" "$model" "$work/body.bin"
ticks=$(getconf CLK_TCK)

run_one() { # ROOT LABEL EXTRA_ARGS
  local root=$1 label=$2 extra=$3 grpc_port=$((20000 + RANDOM % 20000)) server
  local http_port=$((grpc_port + 1))
  # shellcheck disable=SC2086 # the extra flags split on spaces on purpose
  node "$root/dist/src/cli.js" serve --model-repository "$work/models" --intra-op-threads 1 \
    --grpc-port "$grpc_port" --http-port "$http_port" --allow-metrics=false $extra >"$work/server.log" 2>&1 &
  server=$!
  for _ in $(seq 1 120); do curl -sf "http://127.0.0.1:$http_port/v2/health/ready" >/dev/null && break; sleep 0.5; done
  load() {
    # shellcheck disable=SC2086 # the load flags split on spaces on purpose
    h2load ${HOTPATH_AB_LOAD:--c 4 -m 16 -t 1} -D "$1" -d "$work/body.bin" -H 'content-type: application/grpc' -H 'te: trailers' \
      "http://127.0.0.1:$grpc_port/inference.GRPCInferenceService/ModelInfer"
  }
  successes() {
    curl -sf "http://127.0.0.1:$http_port/v2/models/$model/stats" |
      python3 -c 'import json,sys; print(sum(s["inference_stats"]["success"]["count"] for s in json.load(sys.stdin)["model_stats"]))'
  }
  cpu() { awk '{print $14 + $15}' "/proc/$server/task/$server/stat"; }
  all_cpu() { awk '{print $14 + $15}' "/proc/$server/stat"; }
  load 2 >/dev/null
  local s0 c0 p0 s1 c1 p1 rps
  s0=$(successes); c0=$(cpu); p0=$(all_cpu)
  rps=$(load "$seconds" | sed -n 's/.*finished in [^,]*, \([0-9.]*\) req\/s.*/\1/p')
  c1=$(cpu); p1=$(all_cpu); s1=$(successes)
  kill -INT "$server"; wait "$server" || true
  python3 -c "print(f'$label {float(\"$rps\"):8.0f} req/s  successes {$s1 - $s0:6d}  main thread {($c1 - $c0) / $ticks * 1e6 / max(1, $s1 - $s0):6.1f} us/request  process {($p1 - $p0) / $ticks * 1e6 / max(1, $s1 - $s0):6.1f} us/request')"
}

for r in $(seq 1 "$rounds"); do
  if ((r % 2)); then
    run_one "$a" "A r$r" "${HOTPATH_AB_ARGS_A:-}"; run_one "$b" "B r$r" "${HOTPATH_AB_ARGS_B:-}"
  else
    run_one "$b" "B r$r" "${HOTPATH_AB_ARGS_B:-}"; run_one "$a" "A r$r" "${HOTPATH_AB_ARGS_A:-}"
  fi
done
echo "A = $a ${HOTPATH_AB_ARGS_A:-}"; echo "B = $b ${HOTPATH_AB_ARGS_B:-}"; echo "h2load ${HOTPATH_AB_LOAD:--c 4 -m 16 -t 1}; load: $(cat /proc/loadavg)"
