/**
 * Request and response `parameters` (the protocol's InferParameter map) as
 * plain JS values.
 *
 * Outgoing: a boolean is `bool_param`, a string `string_param`, an integer
 * number or a bigint `int64_param` (a bigint above INT64_MAX `uint64_param`),
 * any other number `double_param`. Triton's own parameters (`priority`,
 * `timeout`, `sequence_id`...) are integers, so `{priority: 1}` is what it expects.
 *
 * Incoming: int64 and uint64 values come back as numbers while they are safe
 * integers, as bigints beyond that.
 */
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { InferParameter, InferParameterSchema } from '../generated/grpc_service_pb.js';

export type ParameterValue = boolean | number | bigint | string;
export type Parameters = Record<string, ParameterValue>;

type ParameterInit = MessageInitShape<typeof InferParameterSchema>;

const INT64_MAX = (1n << 63n) - 1n;
const INT64_MIN = -(1n << 63n);
const UINT64_MAX = (1n << 64n) - 1n;

export function toWireParameters(parameters: Parameters | undefined): Record<string, ParameterInit> {
  const wire: Record<string, ParameterInit> = {};
  for (const [key, value] of Object.entries(parameters ?? {})) wire[key] = toWireParameter(key, value);
  return wire;
}

function toWireParameter(key: string, value: ParameterValue): ParameterInit {
  switch (typeof value) {
    case 'boolean':
      return { parameterChoice: { case: 'boolParam', value } };
    case 'string':
      return { parameterChoice: { case: 'stringParam', value } };
    case 'bigint':
      if (value >= INT64_MIN && value <= INT64_MAX) return { parameterChoice: { case: 'int64Param', value } };
      if (value > INT64_MAX && value <= UINT64_MAX) return { parameterChoice: { case: 'uint64Param', value } };
      throw new TypeError(`parameter '${key}': ${value} does not fit in 64 bits`);
    case 'number':
      if (Number.isSafeInteger(value)) return { parameterChoice: { case: 'int64Param', value: BigInt(value) } };
      if (Number.isFinite(value)) return { parameterChoice: { case: 'doubleParam', value } };
      throw new TypeError(`parameter '${key}': expected a finite number, got ${value}`);
    default:
      throw new TypeError(`parameter '${key}': expected a boolean, number, bigint or string, got ${typeof value}`);
  }
}

export function fromWireParameters(wire: Readonly<Record<string, InferParameter>>): Parameters {
  const parameters: Parameters = {};
  for (const [key, parameter] of Object.entries(wire)) {
    const choice = parameter.parameterChoice;
    if (choice.case === undefined) continue;
    parameters[key] =
      typeof choice.value === 'bigint' && choice.value >= BigInt(Number.MIN_SAFE_INTEGER) && choice.value <= BigInt(Number.MAX_SAFE_INTEGER)
        ? Number(choice.value)
        : choice.value;
  }
  return parameters;
}
