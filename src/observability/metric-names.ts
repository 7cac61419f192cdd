/**
 * Every metric hotpath exports, in one place, so names never drift between the
 * code that records them, the README and dashboards.
 *
 * The `nv_*` names and their `model`/`version` labels are Triton's, so existing
 * Triton dashboards work unchanged. The `hotpath_*` names are hotpath's own.
 * Labels are only `model`, `version`, `tenant`, the routes file's `route` and
 * `arm` names and the bounded enums below — never a request id, user id or
 * free text — so the series count is bounded by the number of loaded model
 * versions and the routes file.
 *
 * prom-client's default process metrics (`process_*`, `nodejs_*`) are exported
 * too, under prom-client's standard names.
 */

export const METRIC = {
  // Triton-compatible; cumulative counters read from each version's statistics at scrape time.
  requestSuccess: 'nv_inference_request_success',
  requestFailure: 'nv_inference_request_failure',
  inferenceCount: 'nv_inference_count',
  executionCount: 'nv_inference_exec_count',
  pendingRequests: 'nv_inference_pending_request_count',
  requestDurationUs: 'nv_inference_request_duration_us',
  queueDurationUs: 'nv_inference_queue_duration_us',
  computeInputDurationUs: 'nv_inference_compute_input_duration_us',
  computeInferDurationUs: 'nv_inference_compute_infer_duration_us',
  computeOutputDurationUs: 'nv_inference_compute_output_duration_us',
  // Triton's per-model response cache counters (--cache-config, response_cache { enable: true }).
  cacheHits: 'nv_cache_num_hits_per_model',
  cacheMisses: 'nv_cache_num_misses_per_model',
  cacheHitDurationUs: 'nv_cache_hit_duration_per_model',
  cacheMissDurationUs: 'nv_cache_miss_duration_per_model',
  // Triton-compatible gauges: seconds the version's last load took; the host's CPU and memory.
  modelLoadDurationSecs: 'nv_model_load_duration_secs',
  cpuUtilization: 'nv_cpu_utilization',
  cpuMemoryTotalBytes: 'nv_cpu_memory_total_bytes',
  cpuMemoryUsedBytes: 'nv_cpu_memory_used_bytes',

  // hotpath's own.
  requestDurationMs: 'hotpath_request_duration_ms',
  queueDurationMs: 'hotpath_queue_duration_ms',
  computeInferDurationMs: 'hotpath_compute_infer_duration_ms',
  batchSize: 'hotpath_batch_size',
  modelLoadSeconds: 'hotpath_model_load_seconds',
  modelReady: 'hotpath_model_ready',
  workerPoolThreads: 'hotpath_worker_pool_threads',
  workerPoolInstances: 'hotpath_worker_pool_instances',
  workerPoolQueue: 'hotpath_worker_pool_queue_size',
  inflightRequests: 'hotpath_inflight_requests',

  // Requests refused by their tenant's rate or in-flight limit (src/security/tenant-limits.ts), by tenant and reason.
  tenantRejected: 'hotpath_tenant_rejected_total',

  // Front-door threads (--front-door-threads, src/server/door-threads.ts): connections handed to each, and thread exits.
  doorConnections: 'hotpath_door_connections_total',
  doorThreadExits: 'hotpath_door_thread_exits_total',
  // Inference requests (gRPC ModelInfer, ModelStreamInfer messages, HTTP infer) each door thread took, by who answered: the door itself (a version in its catalog) or the main thread (forwarded).
  doorModelInfer: 'hotpath_door_model_infer_total',

  // The leak patrol (src/patrol).
  patrolRestarts: 'hotpath_patrol_restarts_total',
  modelDegraded: 'hotpath_model_degraded',

  // Triton's GPU gauges (label gpu_uuid); series only with a CUDA device.
  gpuMemoryTotalBytes: 'nv_gpu_memory_total_bytes',
  gpuMemoryUsedBytes: 'nv_gpu_memory_used_bytes',
  gpuUtilization: 'nv_gpu_utilization',
  // A model on the native executor moved to onnxruntime on CPU after a device error.
  deviceFallbacks: 'hotpath_model_device_fallbacks_total',

  // Per-tenant arena gauges (labels tenant, memory="host|device"): registered
  // once an arena statistics source is attached.
  arenaAllocatedBytes: 'hotpath_arena_allocated_bytes',
  arenaReservedBytes: 'hotpath_arena_reserved_bytes',
  arenaQuotaBytes: 'hotpath_arena_quota_bytes',
  arenaEvictions: 'hotpath_arena_evictions_total',
  arenaFragmentation: 'hotpath_arena_fragmentation_ratio',

  // Routes (--routes, src/routing): labels route and arm come from the routes file, so they are bounded by it.
  routeRequests: 'hotpath_route_requests_total',
  breakerState: 'hotpath_breaker_state',
  routeRollbacks: 'hotpath_route_rollbacks_total',
  routeRolledBack: 'hotpath_route_rolled_back',
  routesReloads: 'hotpath_routes_reloads_total',
  shadowRequests: 'hotpath_shadow_requests_total',
  shadowErrors: 'hotpath_shadow_errors_total',
  shadowDropped: 'hotpath_shadow_dropped_total',
  shadowAbsDiff: 'hotpath_shadow_abs_diff',
  shadowQueued: 'hotpath_shadow_queue_size',

  // The payload archive (--archive, src/datachecks/archive): records and bytes written, records dropped by reason.
  archiveRecords: 'hotpath_archive_records_total',
  archiveWrittenBytes: 'hotpath_archive_written_bytes_total',
  archiveDropped: 'hotpath_archive_dropped_total',

  // Drift (src/datachecks/drift): PSI and KS per followed feature, and the state (0 ok, 1 watch, 2 act) per version.
  driftPsi: 'hotpath_drift_psi',
  driftKs: 'hotpath_drift_ks',
  driftState: 'hotpath_drift_state',
} as const;

/** Label names; values of the enum-valued ones come from the constants below. */
export const LABEL = {
  model: 'model',
  version: 'version',
  tenant: 'tenant',
  reason: 'reason',
  kind: 'kind',
  /** 'host' or 'device': which memory ledger a per-tenant arena figure belongs to. */
  memory: 'memory',
  gpuUuid: 'gpu_uuid',
  /** A route of the routes file (--routes). */
  route: 'route',
  /** An arm of that route. */
  arm: 'arm',
  /** How a routed request ended (ROUTE_RESULTS), or how a routes reload ended (RELOAD_RESULTS). */
  result: 'result',
  /** A tensor a drift reference follows (its name, from the model's config). */
  tensor: 'tensor',
  /** A column of that tensor (its index; bounded by hotpath_drift_max_features). */
  feature: 'feature',
  /** A front-door thread's index (0..--front-door-threads - 1). */
  doorThread: 'door_thread',
  /** Who answered a door thread's ModelInfer: 'door' (served there) or 'main' (forwarded to the main thread). */
  answeredBy: 'answered_by',
} as const;

/**
 * How a routed request ended: answered by its arm ('ok'), failed by the arm
 * ('error', what breakers count), failed for the client's own reasons or
 * before it ran ('abandoned'), answered by the fallback while the arm's
 * breaker is open ('fallback'), or refused while it is open with no fallback
 * ('unavailable').
 */
export const ROUTE_RESULTS = ['ok', 'error', 'abandoned', 'fallback', 'unavailable'] as const;
export type RouteResult = (typeof ROUTE_RESULTS)[number];

/** How a routes reload ended (routing/routes-reloader.ts ReloadResult status). */
export const RELOAD_RESULTS = ['swapped', 'unchanged', 'refused'] as const;
export type ReloadResultName = (typeof RELOAD_RESULTS)[number];

/** Why a model left the device: a transient device error (it comes back) or a lost device. */
export const DEVICE_FALLBACK_REASONS = ['device_error', 'device_lost'] as const;
export type DeviceFallbackReason = (typeof DEVICE_FALLBACK_REASONS)[number];

/**
 * Triton's failure reasons: REJECTED (refused or dropped by the scheduler
 * before execution: queue full, queue timeout, deadline passed in the queue,
 * batcher shut down, over quota), CANCELED (cancelled by the client before it
 * ran), BACKEND (failed inside onnxruntime, the executor or their worker),
 * OTHER (the rest: malformed request, model not ready). The kind of each
 * failure decides it (common/error-kinds.ts).
 */
export const FAILURE_REASONS = ['REJECTED', 'CANCELED', 'BACKEND', 'OTHER'] as const;
export type FailureReason = (typeof FAILURE_REASONS)[number];

/** The three ways arena fragmentation is reported (DESIGN.md, statistics). */
export const FRAGMENTATION_KINDS = ['largest_free', 'reserved_unallocated', 'allocated_unrequested'] as const;

/** Millisecond buckets for request-path latencies: sub-ms to seconds. */
export const LATENCY_BUCKETS_MS = [0.1, 0.25, 0.5, 1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000];

/** Rows per model execution. */
export const BATCH_SIZE_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];

/**
 * Why the payload archive dropped a record: its queue was full (the writer
 * is behind), the record alone exceeds the archive's size bound, writing
 * failed (a full disk, a lost writer thread), or the archive was closing.
 */
export const ARCHIVE_DROP_REASONS = ['queue_full', 'too_large', 'write_error', 'closed'] as const;
export type ArchiveDropReason = (typeof ARCHIVE_DROP_REASONS)[number];

/** Why the leak patrol restarted a pool: hotpath_patrol_restarts_total{reason} (patrol/patrol-policy.ts decides). */
export const PATROL_REASONS = ['leak_threshold', 'sustained_growth'] as const;
export type PatrolReason = (typeof PATROL_REASONS)[number];

/** Why a tenant's limit refused a request: hotpath_tenant_rejected_total{reason} (security/tenant-limits.ts decides). */
export const TENANT_LIMIT_REASONS = ['rate', 'inflight'] as const;
export type TenantLimitReason = (typeof TENANT_LIMIT_REASONS)[number];
