/**
 * The response cache on the request path (the runner calls these around the
 * execution): which requests may be cached, and the answer of one that may,
 * with Triton's statistics (cache_hit / cache_miss in ModelStatistics).
 *
 * A hit answers exactly what the miss answered, with the request's own id.
 * A request that waited for an identical run in flight (single flight) is
 * counted as a hit: it was answered without an execution of its own.
 */
import { create, toBinary } from '@bufbuild/protobuf';
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
const instances = new WeakMap<ModelVersion, number>();
let nextInstance = 0;

function instanceOf(version: ModelVersion): number {
  let n = instances.get(version);
  if (n === undefined) {
    n = nextInstance++;
    instances.set(version, n);
  }
  return n;
}

/** Test-only fault hooks (request or model config parameters) are never cached: they must reach the model. */
const FAULT_PREFIX = 'hotpath_fault';

/** Whether the version's config opts in (response_cache { enable: true }) and nothing asks for a fault. */
export function cacheableBy(request: ModelInferRequest, version: ModelVersion): boolean {
  if (version.config?.responseCache?.enable !== true) return false;
  if (request.parameters[FAULT_PARAMETER] !== undefined) return false;
  return !Object.keys(version.config.parameters).some((key) => key.startsWith(FAULT_PREFIX));
}

export async function cachedAnswer(
  cache: ResponseCache<ModelInferResponse>,
  request: ModelInferRequest,
  version: ModelVersion,
  elapsedNs: () => number,
  run: () => Promise<ModelInferResponse>,
): Promise<ModelInferResponse> {
  const material = cacheKeyMaterial(request, version.modelName, `${version.versionLabel}#${instanceOf(version)}`);
  const outcome = await cache.get(material, version.tenant, async () => {
    const value = await run();
    return { value, bytes: toBinary(ModelInferResponseSchema, value).byteLength };
  });
  if (outcome.kind === 'miss') {
    version.statistics.recordCacheMiss(outcome.cacheNs);
    return outcome.value;
  }
  version.statistics.recordCacheHit(rowsOf(request, version), elapsedNs(), outcome.cacheNs);
  // A shallow copy: stored answers are never modified, only their id differs.
  return create(ModelInferResponseSchema, { ...outcome.value, id: request.id });
}

/** Rows of the request, as Triton counts inference_count: the batch dimension, or 1 for a model without one. */
function rowsOf(request: ModelInferRequest, version: ModelVersion): number {
  if (version.signature.maxBatchSize <= 0) return 1;
  const rows = Number(request.inputs[0]?.shape[0] ?? 1n);
  return Number.isSafeInteger(rows) && rows > 0 ? rows : 1;
}
