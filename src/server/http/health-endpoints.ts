/**
 * The health endpoints, for load balancers, kubelet probes and operators:
 *
 * - `GET /v2/health/live`: 200 as soon as the process serves;
 * - `GET /v2/health/ready`: 200 once every start-up model is ready, 503 while
 *   loading, warming, failed or draining;
 * - `GET /healthz`: JSON `{status, models: [{name, version, state, reason,
 *   executor}]}`, with 200 when ready and 503 otherwise. `executor` says
 *   where each version runs: 'native-cuda', 'native-host' or 'onnxruntime'.
 *   `status` is 'degraded' (503, with a `reason`) once the CUDA device was
 *   lost: models still answer on CPU, but the pod should be replaced.
 *   With --routes, `routes` shows each route's arms, weights, breakers and
 *   rollbacks (an open breaker does not change `status`).
 *
 * With --require-api-key, `/healthz` lists the models only for the admin
 * tenant's key; any other caller gets the bare `{status}`.
 *
 * Readiness answers 503, not Triton's 400, because probes and load balancers
 * read 503 as "not now" (tritonclient treats any non-200 as not ready).
 */
import type { ServerResponse } from 'node:http';
import { sendJson } from './http-reply.js';

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
  /** With --routes: the routes file, its last reload, and each route's arms, weights, breakers and rollbacks. */
  readonly routes?: unknown;
}

export interface HealthProbes {
  readonly isLive: () => boolean;
  readonly isReady: () => boolean;
  readonly report: () => Promise<HealthReport>;
}

export function answerLive(response: ServerResponse, probes: HealthProbes): void {
  const live = probes.isLive();
  sendJson(response, live ? 200 : 503, { live });
}

export async function answerReady(response: ServerResponse, probes: HealthProbes): Promise<void> {
  if (probes.isReady()) return sendJson(response, 200, { ready: true });
  try {
    const report = await probes.report();
    sendJson(response, 503, { ready: false, ...(report.status === 'degraded' ? { status: 'degraded', reason: report.reason } : {}) });
  } catch {
    sendJson(response, 503, { ready: false });
  }
}

/** `detailed`: the models (and the degraded reason) too; otherwise the bare status. */
export async function answerHealthz(response: ServerResponse, probes: HealthProbes, detailed = true): Promise<void> {
  try {
    const report = await probes.report();
    sendJson(response, report.status === 'ready' ? 200 : 503, detailed ? report : { status: report.status });
  } catch (err) {
    sendJson(response, 500, { error: err instanceof Error ? err.message : String(err) });
  }
}
