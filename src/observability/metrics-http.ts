/**
 * The Prometheus endpoint on `--metrics-port` (Triton's 8002): `GET /metrics`.
 * Kept apart from the health port, as in Triton, so a scrape can never queue
 * behind a probe (or the reverse).
 */
import http from 'node:http';
import type { ServerMetrics } from './metrics.js';

export function createMetricsHttpServer(metrics: ServerMetrics): http.Server {
  return http.createServer((request, response) => {
    const route = `${request.method} ${(request.url ?? '').split('?')[0]}`;
    if (route !== 'GET /metrics') {
      response.writeHead(404, { 'content-type': 'text/plain' });
      response.end(`no route for ${route}; served: GET /metrics\n`);
      return;
    }
    metrics.render().then(
      (text) => {
        response.writeHead(200, { 'content-type': metrics.contentType });
        response.end(text);
      },
      (err: unknown) => {
        response.writeHead(500, { 'content-type': 'text/plain' });
        response.end(`metrics collection failed: ${err instanceof Error ? err.message : String(err)}\n`);
      },
    );
  });
}
