/**
 * The HTTP endpoints on `--http-port`, for load balancers, kubelet probes and
 * operators that do not speak gRPC:
 *
 * - `GET /v2/health/live`: 200 as soon as the process serves;
 * - `GET /v2/health/ready`: 200 once every start-up model is ready, 503 while
 *   loading, warming, failed or draining;
 * - `GET /healthz`: JSON `{status, models: [{name, version, state, reason,
 *   executor}]}`, with 200 when ready and 503 otherwise. `executor` says
 *   where each version runs: 'native-cuda', 'native-host' or 'onnxruntime'.
 *   `status` is 'degraded' (503, with a `reason`) once the CUDA device was
 *   lost: models still answer on CPU, but the pod should be replaced.
 *
 * Inference over HTTP is not served.
 */
import http from 'node:http';

export interface HealthModelEntry {
  readonly name: string;
  readonly version: string;
  readonly state: string;
  readonly reason: string;
  readonly executor?: string;
  readonly executorReason?: string;
}

export interface HealthReport {
  /** 'ready', 'not_ready' (starting, or a start-up model is not ready), 'degraded' (device lost) or 'draining'. */
  readonly status: 'ready' | 'not_ready' | 'degraded' | 'draining';
  readonly models: readonly HealthModelEntry[];
  readonly reason?: string;
}

export interface HealthProbes {
  readonly isLive: () => boolean;
  readonly isReady: () => boolean;
  readonly report: () => Promise<HealthReport>;
}

export function createHealthHttpServer(probes: HealthProbes): http.Server {
  return http.createServer((request, response) => {
    const route = `${request.method} ${(request.url ?? '').split('?')[0]}`;
    const reply = (code: number, body: unknown) => {
      response.writeHead(code, { 'content-type': 'application/json' });
      response.end(JSON.stringify(body));
    };
    switch (route) {
      case 'GET /v2/health/live':
        return reply(probes.isLive() ? 200 : 503, { live: probes.isLive() });
      case 'GET /v2/health/ready':
        if (probes.isReady()) return reply(200, { ready: true });
        return void probes.report().then(
          (report) => reply(503, { ready: false, ...(report.status === 'degraded' ? { status: 'degraded', reason: report.reason } : {}) }),
          () => reply(503, { ready: false }),
        );
      case 'GET /healthz':
        return void probes.report().then(
          (report) => reply(report.status === 'ready' ? 200 : 503, report),
          (err: unknown) => reply(500, { error: err instanceof Error ? err.message : String(err) }),
        );
      default:
        return reply(404, { error: `no route for ${route}; served: GET /v2/health/live, GET /v2/health/ready, GET /healthz` });
    }
  });
}
