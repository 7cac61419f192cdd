/**
 * tritonserver's flags that mean nothing here (options table,
 * common/option-table.ts). A Triton or KServe command line works unchanged:
 * each of these is accepted, its value ignored, and one warning line at
 * start-up says it has no effect here and why. None ends the process.
 *
 * Triton's flags that hotpath implements, or maps to its own, live with their
 * features (server/door-options.ts, repository/repository-options.ts...).
 */
import type { FlagSpec, OptionEntry } from '../common/option-table.js';

/** Why a group of Triton's flags has no effect here. */
const REASONS = {
  gpuPools: 'the native arena owns device and pinned memory (--memory-capacity, --device-memory-capacity)',
  gpu: "hotpath's CUDA use is its own executor on one device (--device)",
  backends: "hotpath's one backend is onnxruntime, built in",
  repoagent: 'hotpath has no repository agents',
  threads: 'Node serves the doors on one thread and the models on worker threads',
  grpcTuning: "grpc-js has no such setting; hotpath's gRPC limits are --grpc-max-concurrent-streams and the --grpc-keepalive-* flags",
  forward: 'hotpath forwards no headers to models',
  reuse: 'hotpath binds each port once, without SO_REUSEPORT',
  metrics: 'hotpath has no GPU metrics collector; nv_cpu_* and the model metrics are always on (--allow-metrics)',
  metricsConfig: 'hotpath has no metric settings beyond --metrics-tenant-labels',
  trace: 'hotpath has no request tracing (its access log is --access-log-sample-rate)',
  rateLimit: 'hotpath has no instance rate limiter; per-tenant limits are in --tenants-file',
  cacheDir: 'hotpath has only the built-in local cache (--cache-config local,size=SIZE)',
  namespacing: 'model names are unique across the repositories here, as with namespacing off',
  retry: 'a failed model load is not retried; load it again through the repository API',
  sagemaker: 'hotpath serves KServe V2 over HTTP and gRPC only, no SageMaker endpoint',
  vertex: 'hotpath serves KServe V2 over HTTP and gRPC only, no Vertex AI endpoint',
  tensorflow: 'no TensorFlow backend here',
} as const;

type Reason = keyof typeof REASONS;

/** [name, value placeholder (undefined: boolean), reason]. */
const NO_EFFECT: readonly (readonly [string, string | undefined, Reason])[] = [
  ['pinned-memory-pool-byte-size', 'N', 'gpuPools'],
  ['cuda-memory-pool-byte-size', 'GPU:N', 'gpuPools'],
  ['cuda-virtual-address-size', 'GPU:N', 'gpuPools'],
  ['min-supported-compute-capability', 'X', 'gpu'],
  ['model-load-gpu-limit', 'GPU:FRACTION', 'gpu'],
  ['enable-peer-access', undefined, 'gpu'],
  ['buffer-manager-thread-count', 'N', 'threads'],
  ['host-policy', 'NAME,KEY=VALUE', 'threads'],
  ['backend-directory', 'DIR', 'backends'],
  ['repoagent-directory', 'DIR', 'repoagent'],
  ['grpc-infer-allocation-pool-size', 'N', 'grpcTuning'],
  ['grpc-max-response-pool-size', 'N', 'grpcTuning'],
  ['grpc-infer-response-compression-level', 'LEVEL', 'grpcTuning'],
  ['grpc-keepalive-permit-without-calls', undefined, 'grpcTuning'],
  ['grpc-http2-max-pings-without-data', 'N', 'grpcTuning'],
  ['grpc-http2-min-recv-ping-interval-without-data', 'MS', 'grpcTuning'],
  ['grpc-http2-max-ping-strikes', 'N', 'grpcTuning'],
  ['grpc-header-forward-pattern', 'REGEX', 'forward'],
  ['http-header-forward-pattern', 'REGEX', 'forward'],
  ['reuse-http-port', undefined, 'reuse'],
  ['reuse-grpc-port', undefined, 'reuse'],
  ['allow-gpu-metrics', undefined, 'metrics'],
  ['allow-cpu-metrics', undefined, 'metrics'],
  ['metrics-config', 'KEY=VALUE', 'metricsConfig'],
  ['trace-config', 'KEY=VALUE', 'trace'],
  ['trace-file', 'FILE', 'trace'],
  ['trace-level', 'LEVEL', 'trace'],
  ['trace-rate', 'N', 'trace'],
  ['trace-count', 'N', 'trace'],
  ['trace-log-frequency', 'N', 'trace'],
  ['rate-limit', 'MODE', 'rateLimit'],
  ['rate-limit-resource', 'NAME:COUNT[:DEVICE]', 'rateLimit'],
  ['cache-directory', 'DIR', 'cacheDir'],
  ['model-namespacing', undefined, 'namespacing'],
  ['model-load-retry-count', 'N', 'retry'],
  ['allow-sagemaker', undefined, 'sagemaker'],
  ['sagemaker-port', 'N', 'sagemaker'],
  ['sagemaker-safe-port-range', 'FROM-TO', 'sagemaker'],
  ['sagemaker-thread-count', 'N', 'sagemaker'],
  ['allow-vertex-ai', undefined, 'vertex'],
  ['vertex-ai-port', 'N', 'vertex'],
  ['vertex-ai-thread-count', 'N', 'vertex'],
  ['vertex-ai-default-model', 'NAME', 'vertex'],
  ['allow-soft-placement', undefined, 'tensorflow'],
  ['gpu-memory-fraction', 'X', 'tensorflow'],
  ['tensorflow-version', 'N', 'tensorflow'],
];

/** The names of Triton's flags accepted with no effect (for the tests and the README). */
export const NO_EFFECT_FLAGS: readonly string[] = NO_EFFECT.map(([name]) => name);

export const TRITON_NO_EFFECT_OPTIONS: readonly OptionEntry<object>[] = [{
  flags: NO_EFFECT.map(([name, arg, reason]): FlagSpec => ({ name, arg, repeatable: true, triton: true, help: `no effect here: ${REASONS[reason]}` })),
  defaults: () => ({}),
  parse: () => ({}),
  warn: (values) =>
    NO_EFFECT.filter(([name]) => values[name] !== undefined).map(([name, , reason]) => `--${name}: accepted, no effect here: ${REASONS[reason]}`),
}];
