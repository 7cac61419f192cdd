/**
 * The KServe V2 HTTP health endpoints, for load balancers and kubelet probes
 * that do not speak gRPC: `GET /v2/health/live` and `GET /v2/health/ready`
 * (200 when true, 503 when not). Inference over HTTP is not served.
 */
import http from 'node:http';

export interface HealthProbes {
  readonly isLive: () => boolean;
  readonly isReady: () => boolean;
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
        return reply(probes.isReady() ? 200 : 503, { ready: probes.isReady() });
      default:
        return reply(404, { error: `no route for ${route}; served: GET /v2/health/live, GET /v2/health/ready` });
    }
  });
}
