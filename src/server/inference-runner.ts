/**
 * The request path shared by ModelInfer and ModelStreamInfer: resolve the model
 * version, validate and prepare the inputs, run them on the version's worker
 * pool, and build the response; statistics are recorded on the way.
 */
import type { Logger } from 'pino';
import type { ModelInferRequest, ModelInferResponse } from '../generated/grpc_service_pb.js';
import type { ModelManager } from '../repository/model-manager.js';
import type { ModelVersion } from '../repository/model-version.js';
import { invalidArgument } from '../common/serving-error.js';
import { epochMs, type InferTask } from '../workers/worker-protocol.js';
import { FAULT_PARAMETER, prepareInference, stringParameter } from './infer-request.js';
import { buildInferResponse } from './infer-response.js';

export interface InferenceRunnerOptions {
  readonly models: ModelManager;
  readonly faultInjection: boolean;
  readonly logger: Logger;
}

export class InferenceRunner {
  constructor(private readonly options: InferenceRunnerOptions) {}

  async infer(request: ModelInferRequest): Promise<ModelInferResponse> {
    const started = process.hrtime.bigint();
    const version = this.options.models.resolve(request.modelName, request.modelVersion);
    try {
      return await this.run(request, version, started);
    } catch (err) {
      version.statistics.recordFailure(Number(process.hrtime.bigint() - started));
      throw err;
    }
  }

  private async run(request: ModelInferRequest, version: ModelVersion, started: bigint): Promise<ModelInferResponse> {
    const prepared = prepareInference(request, version.signature);
    const task: InferTask = {
      kind: 'infer',
      inputs: prepared.inputs,
      outputNames: prepared.outputs.map((spec) => spec.name),
      queuedAtMs: epochMs(),
      ...this.faultFor(request),
    };
    const result = await version.run(task, prepared.transfer);
    const response = buildInferResponse(
      request,
      version.versionLabel,
      prepared.outputs,
      result.outputs,
      version.signature.maxBatchSize > 0,
    );
    version.statistics.recordExecution(prepared.batchSize, result.timing);
    version.statistics.recordSuccess(prepared.batchSize, Number(process.hrtime.bigint() - started), result.timing);
    return response;
  }

  /** The test-only fault hook, refused unless the server runs with --enable-fault-injection. */
  private faultFor(request: ModelInferRequest): Pick<InferTask, 'fault'> {
    const fault = stringParameter(request.parameters, FAULT_PARAMETER);
    if (fault === undefined) return {};
    if (!this.options.faultInjection) {
      throw invalidArgument(
        `parameter '${FAULT_PARAMETER}' is refused: fault injection is disabled (start the server with --enable-fault-injection)`,
      );
    }
    if (fault !== 'crash-worker') {
      throw invalidArgument(`parameter '${FAULT_PARAMETER}': expected 'crash-worker', got '${fault}'`);
    }
    return { fault };
  }
}
