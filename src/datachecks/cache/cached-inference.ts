/**
 * The response cache on the request path (the runner calls these around the
 * execution): which requests may be cached, and the answer of one that may,
 * with Triton's statistics (cache_hit / cache_miss in ModelStatistics).
 *
 * A hit answers exactly what the miss answered, with the request's own id.
 * A request that waited for an identical run in flight (single flight) is
 * counted as a hit: it was answered without an execution of its own.
 *
 * The cache keeps its own serialized copy of each answer (as Triton's cache
 * does), and every hit decodes a fresh object from it: nothing a caller does
 * to its answer (a route renaming it, say) can reach what was stored or what
 * another caller received.
 */
import { fromBinary, toBinary } from '@bufbuild/protobuf';
import {
  ModelInferResponseSchema,
  type ModelInferRequest,
  type ModelInferResponse,
} from '../../generated/grpc_service_pb.js';
import type { ModelVersion } from '../../repository/model-version.js';
import { FAULT_PARAMETER } from '../../tensor/infer-request.js';
import { cacheKeyMaterial } from './cache-key.js';
import type { ResponseCache } from './response-cache.js';

/**
 * Each loaded ModelVersion object gets its own number in the key: a version
 * reloaded under the same label (a new model file) never answers from its
 * predecessor's entries, which then age out of the LRU.
 */
const instances = new WeakMap<CachedVersion, number>();
let nextInstance = 0;

function instanceOf(version: CachedVersion): number {
  let n = instances.get(version);
  if (n === undefined) {
    n = nextInstance++;
    instances.set(version, n);
  }
  return n;
}

/** Test-only fault hooks (request or model config parameters) are never cached: they must reach the model. */
const FAULT_PREFIX = 'hotpath_fault';

/**
 * Whether answers of `version` may be cached: its config opts in
 * (response_cache { enable: true }) and sets no test-only fault parameter.
 * Fixed per version: the request path reads it when the version's plan is built.
 */
export function cacheableVersion(version: Pick<ModelVersion, 'config'>): boolean {
  if (version.config?.responseCache?.enable !== true) return false;
  return !Object.keys(version.config.parameters).some((key) => key.startsWith(FAULT_PREFIX));
}

/** A request carrying a test-only fault must reach the model: never answered from, or stored in, the cache. */
export function requestAsksForFault(request: ModelInferRequest): boolean {
  return request.parameters[FAULT_PARAMETER] !== undefined;
}

/** What the cache reads of the version: a loaded ModelVersion is one. */
export type CachedVersion = Pick<ModelVersion, 'modelName' | 'versionLabel' | 'tenant' | 'signature' | 'statistics'>;

export async function cachedAnswer(
  cache: ResponseCache<Uint8Array>,
  request: ModelInferRequest,
  version: CachedVersion,
  elapsedNs: () => number,
  run: () => Promise<ModelInferResponse>,
): Promise<ModelInferResponse> {
  const material = cacheKeyMaterial(request, version.modelName, `${version.versionLabel}#${instanceOf(version)}`);
  // The run's own answer goes to this caller only; the cache and any waiters get the bytes.
  let ran: ModelInferResponse | undefined;
  const outcome = await cache.get(material, version.tenant, async () => {
    ran = await run();
    const serialized = toBinary(ModelInferResponseSchema, ran);
    return { value: serialized, bytes: serialized.byteLength };
  });
  if (outcome.kind === 'miss' && ran !== undefined) {
    version.statistics.recordCacheMiss(outcome.cacheNs);
    return ran;
  }
  version.statistics.recordCacheHit(rowsOf(request, version), elapsedNs(), outcome.cacheNs);
  // Decoded from a copy: protobuf-es decodes bytes fields as views of its input,
  // and the stored bytes must stay out of every caller's reach.
  const answer = fromBinary(ModelInferResponseSchema, outcome.value.slice());
  answer.id = request.id;
  return answer;
}

/** Rows of the request, as Triton counts inference_count: the batch dimension, or 1 for a model without one. */
function rowsOf(request: ModelInferRequest, version: CachedVersion): number {
  if (version.signature.maxBatchSize <= 0) return 1;
  const rows = Number(request.inputs[0]?.shape[0] ?? 1n);
  return Number.isSafeInteger(rows) && rows > 0 ? rows : 1;
}
