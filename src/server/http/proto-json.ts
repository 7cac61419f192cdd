/**
 * Protocol messages as Triton's HTTP server writes them: the proto JSON
 * mapping with the proto field names (`max_batch_size`, `model_stats`),
 * fields at their default values included, enums by name, and 64-bit
 * integers as JSON numbers rather than the strings the proto JSON mapping
 * prescribes (Triton rewrites them the same way: `dims: [-1, 32]`, not
 * `["-1", "32"]`).
 *
 * A 64-bit value above 2^53 loses its low bits as a JSON number; counters and
 * nanosecond sums stay far below that in practice.
 *
 * Pure; safe in any thread.
 */
import { ScalarType, toJson, type DescField, type DescMessage, type JsonValue, type MessageShape } from '@bufbuild/protobuf';

/** `message` as Triton's HTTP API answers it. */
export function tritonJson<Desc extends DescMessage>(schema: Desc, message: MessageShape<Desc>): JsonValue {
  const json = toJson(schema, message, { useProtoFieldName: true, alwaysEmitImplicit: true });
  return int64AsNumbers(schema, json);
}

const INT64_SCALARS = new Set<ScalarType>([
  ScalarType.INT64,
  ScalarType.UINT64,
  ScalarType.FIXED64,
  ScalarType.SFIXED64,
  ScalarType.SINT64,
]);

/** Walks `json` alongside its message descriptor, turning every 64-bit integer string into a number. */
function int64AsNumbers(schema: DescMessage, json: JsonValue): JsonValue {
  if (json === null || typeof json !== 'object' || Array.isArray(json)) return json;
  const object: Record<string, JsonValue> = { ...json };
  for (const field of schema.fields) {
    const value = object[field.name];
    if (value !== undefined) object[field.name] = fieldAsNumbers(field, value);
  }
  return object;
}

function fieldAsNumbers(field: DescField, value: JsonValue): JsonValue {
  switch (field.fieldKind) {
    case 'scalar':
      return scalarAsNumber(field.scalar, value);
    case 'message':
      return int64AsNumbers(field.message, value);
    case 'list':
      if (!Array.isArray(value)) return value;
      if (field.listKind === 'scalar') return value.map((element) => scalarAsNumber(field.scalar, element));
      if (field.listKind === 'message') return value.map((element) => int64AsNumbers(field.message, element));
      return value;
    case 'map': {
      if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
      const entries = Object.entries(value);
      if (field.mapKind === 'scalar') return Object.fromEntries(entries.map(([k, v]) => [k, scalarAsNumber(field.scalar, v)]));
      if (field.mapKind === 'message') return Object.fromEntries(entries.map(([k, v]) => [k, int64AsNumbers(field.message, v)]));
      return value;
    }
    default:
      return value;
  }
}

function scalarAsNumber(scalar: ScalarType, value: JsonValue): JsonValue {
  return INT64_SCALARS.has(scalar) && typeof value === 'string' ? Number(value) : value;
}
