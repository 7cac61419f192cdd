/**
 * Access logging for inference requests: every failed request is logged, and
 * successful ones at a sampling rate (`--access-log-sample-rate`, default
 * 0.01), so the log stays affordable at tens of thousands of requests per
 * second while no error is ever dropped.
 *
 * Line schema (pino JSON): time, level, service, component ('access'),
 * request_id, trace_id, model, model_version, tenant, latency_ms, status
 * (the gRPC status name) and, on failure, error (the message the client got).
 */
import type { Logger } from 'pino';
import { status as grpcStatus } from '@grpc/grpc-js';
import { echoField } from '../common/echo.js';

export interface AccessRecord {
  readonly requestId: string;
  readonly traceId: string | undefined;
  readonly method: string;
  readonly model: string;
  readonly modelVersion: string | undefined;
  readonly tenant: string | undefined;
  readonly latencyMs: number;
  readonly code: grpcStatus;
  readonly error?: string;
}

// Server-side faults are errors; a client's bad request is a warning.
const SERVER_FAULTS = new Set<grpcStatus>([grpcStatus.INTERNAL, grpcStatus.UNKNOWN, grpcStatus.DATA_LOSS]);

export class AccessLog {
  private readonly log: Logger;

  constructor(
    logger: Logger,
    private readonly sampleRate: number,
    private readonly random: () => number = Math.random,
  ) {
    this.log = logger.child({ component: 'access' });
  }

  /**
   * Draws whether the next success is logged. The request path asks before
   * building the record (then recordSampledSuccess), so a success that is
   * not sampled costs no allocation.
   */
  sampleSuccess(): boolean {
    return this.sampleRate >= 1 || (this.sampleRate > 0 && this.random() < this.sampleRate);
  }

  /** Logs a failure always, a success when sampleSuccess() draws it. */
  record(entry: AccessRecord): void {
    const ok = entry.code === grpcStatus.OK;
    if (ok && !this.sampleSuccess()) return;
    this.write(entry, ok);
  }

  /** Logs a success the caller already sampled with sampleSuccess(). */
  recordSampledSuccess(entry: AccessRecord): void {
    this.write(entry, true);
  }

  private write(entry: AccessRecord, ok: boolean): void {
    const fields = {
      request_id: entry.requestId,
      trace_id: entry.traceId,
      method: entry.method,
      // As the client sent them when they named nothing loaded: bounded and escaped (echo.ts).
      model: echoField(entry.model),
      model_version: echoField(entry.modelVersion),
      tenant: entry.tenant,
      latency_ms: Math.round(entry.latencyMs * 1000) / 1000,
      status: grpcStatus[entry.code] ?? String(entry.code),
      error: entry.error,
    };
    if (ok) this.log.info(fields, 'request');
    else if (SERVER_FAULTS.has(entry.code)) this.log.error(fields, 'request failed');
    else this.log.warn(fields, 'request failed');
  }
}
