/**
 * What the server says about its health: grpc.health.v1's status (kept in
 * step with ServerReady by `refresh`) and the /healthz report (status, each
 * version's state and executor, the lost device, input drift, the routes).
 * Its one job is to compose that view from sources it is given; the phase
 * machine (hotpath-server.ts) decides readiness, and the doors
 * (server-doors.ts) serve both views.
 *
 * Main thread only.
 */
import { HealthImplementation } from 'grpc-health-check';
import type { ModelManager } from '../repository/model-manager.js';
import type { DriftChecks } from '../datachecks/drift/drift-checks.js';
import type { DeviceHealth } from '../executor/device-health.js';
import type { RouteService } from '../inference/routing/route-service.js';
import type { HealthReport } from './http/health-endpoints.js';

/** Where the health view reads from. */
export interface HealthSources {
  /** ServerReady (HotpathServer.isReady). */
  readonly isReady: () => boolean;
  /** Whether the drain started (or ended): /healthz says 'draining'. */
  readonly isDraining: () => boolean;
  readonly models: ModelManager;
  readonly drift: DriftChecks;
  readonly deviceHealth: DeviceHealth;
  readonly routes: () => RouteService | undefined;
}

export class ServerHealth {
  /** The grpc.health.v1 service, NOT_SERVING until the first refresh finds the server ready. */
  readonly grpc = new HealthImplementation({ '': 'NOT_SERVING' });

  constructor(private readonly sources: HealthSources) {}

  /** Keeps grpc.health.v1 in step with ServerReady. */
  refresh(): void {
    this.grpc.setStatus('', this.sources.isReady() ? 'SERVING' : 'NOT_SERVING');
  }

  /** GET /healthz's body (see http/health-endpoints.ts). */
  async report(): Promise<HealthReport> {
    const { models: manager, drift, deviceHealth, isReady } = this.sources;
    // A version at drift's 'act' with hotpath_drift_action 'degrade' is marked, and so is the server's status.
    const models = (await manager.index(false)).map((entry) =>
      drift.isDegraded(entry.name, entry.version) ? { ...entry, drift: 'act', reason: entry.reason || 'input drift at act' } : entry,
    );
    const lost = deviceHealth.lost;
    const drifted = drift.degradedReason();
    const status = this.sources.isDraining()
      ? 'draining'
      : lost !== undefined || (drifted !== undefined && isReady())
        ? 'degraded'
        : isReady()
          ? 'ready'
          : 'not_ready';
    const routes = this.sources.routes();
    return {
      status,
      models,
      ...(lost !== undefined ? { reason: `CUDA device lost: ${lost}` } : drifted !== undefined ? { reason: drifted } : {}),
      ...(routes !== undefined ? { routes: routes.healthSnapshot() } : {}),
    };
  }
}
