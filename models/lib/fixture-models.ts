// Throw-away models for tests: a single-tensor Identity model of any datatype,
// written into a (temporary) Triton-layout repository. The e2e suites build one per
// datatype to check that every KServe datatype survives the round trip, and write one
// without config.pbtxt to exercise config auto-complete from the ONNX metadata.

import { serializeModel, node, tensorValueInfo, type Dim } from './onnx-builder.js';
import { DATATYPES, type TritonDatatype } from './datatypes.js';
import { writeModelFiles } from './repository-writer.js';
import { renderModelConfig } from './triton-config.js';

export interface IdentityModelOptions {
  /** Model (directory) name. */
  name: string;
  dtype: TritonDatatype;
  /**
   * 0 = no batching: `dims` is then the whole shape. > 0: the model gets a leading
   * symbolic "batch" dimension and config.pbtxt declares dims without it.
   */
  maxBatchSize: number;
  /** false = write only <name>/1/model.onnx (for auto-complete tests). */
  withConfig: boolean;
  /** Non-batch dimensions, -1 = variable. Defaults to [-1]. */
  dims?: readonly number[];
  /** Version directory; defaults to 1. */
  version?: number;
}

export interface IdentityModelPaths {
  modelPath: string;
  /** Absent when withConfig is false. */
  configPath?: string;
}

/**
 * Write `<dir>/<name>/[config.pbtxt]` and `<dir>/<name>/<version>/model.onnx`:
 * INPUT0 -> Identity -> OUTPUT0.
 *
 * ONNX shape: ["batch", ...dims] when maxBatchSize > 0, else dims; a -1 in dims is an
 * unnamed dynamic dimension (neither dim_value nor dim_param), so the model covers both
 * ways a dynamic dimension is written in the wild.
 */
export async function writeIdentityModel(dir: string, opts: IdentityModelOptions): Promise<IdentityModelPaths> {
  const dims = opts.dims ?? [-1];
  if (!Number.isInteger(opts.maxBatchSize) || opts.maxBatchSize < 0) {
    throw new RangeError(`maxBatchSize must be a non-negative integer, got ${opts.maxBatchSize}`);
  }
  const onnxDims: Dim[] = opts.maxBatchSize > 0 ? ['batch', ...dims] : [...dims];
  const elemType = DATATYPES[opts.dtype].onnx;
  const model = () =>
    serializeModel({
      name: opts.name,
      doc: `Identity test model for ${opts.dtype}.`,
      inputs: [tensorValueInfo('INPUT0', elemType, onnxDims)],
      outputs: [tensorValueInfo('OUTPUT0', elemType, onnxDims)],
      nodes: [node('Identity', ['INPUT0'], ['OUTPUT0'])],
    });
  const config = opts.withConfig
    ? renderModelConfig({
        name: opts.name,
        maxBatchSize: opts.maxBatchSize,
        inputs: [{ name: 'INPUT0', datatype: opts.dtype, dims }],
        outputs: [{ name: 'OUTPUT0', datatype: opts.dtype, dims }],
      })
    : undefined;
  const written = await writeModelFiles(dir, {
    name: opts.name,
    ...(opts.version !== undefined ? { version: opts.version } : {}),
    ...(config !== undefined ? { config } : {}),
    model,
  });
  const configPath = written.find((w) => w.path.endsWith('config.pbtxt'))?.path;
  const modelPath = written.find((w) => w.path.endsWith('model.onnx'))!.path;
  return configPath !== undefined ? { modelPath, configPath } : { modelPath };
}
