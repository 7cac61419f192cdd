/**
 * A ModelConfig (or any protobuf-es message) as protobuf text format, the
 * config.pbtxt `hotpath tune` writes. Generic over the message's schema, so
 * every field the config carries is written, not only the ones tune
 * changes: scalars that differ from their default (proto3's implicit
 * presence), enums by name, messages set (oneof members included), lists
 * (`dims: [ 1, 2 ]`, and Triton's `input [ { ... }, { ... } ]` for
 * messages), and maps as repeated `{ key: ... value: ... }` entries, in
 * field-number order with two-space indents, as Triton's own configs look.
 * Strings are escaped as text format wants: \", \\, \n, \r, \t, and other
 * control bytes as octal.
 *
 * Pure; safe in any thread. The test round-trips its output through the
 * server's config parser (src/repository/model-config.ts).
 */
import { ScalarType, type DescEnum, type DescField, type DescMessage, type Message } from '@bufbuild/protobuf';
import { reflect, type ReflectMessage } from '@bufbuild/protobuf/reflect';

/** `message` (of `schema`) as text format, ending with a newline; `header` lines become `#` comments on top. */
export function toPbtxt<T extends Message>(schema: DescMessage, message: T, header: readonly string[] = []): string {
  const lines = header.map((line) => `# ${line}`);
  writeFields(reflect(schema, message), '', lines);
  return `${lines.join('\n')}\n`;
}

function writeFields(message: ReflectMessage, indent: string, out: string[]): void {
  const fields = [...message.fields].sort((a, b) => a.number - b.number);
  for (const field of fields) {
    if (!message.isSet(field)) continue;
    writeField(message, field, indent, out);
  }
}

function writeField(message: ReflectMessage, field: DescField, indent: string, out: string[]): void {
  switch (field.fieldKind) {
    case 'scalar':
      out.push(`${indent}${field.name}: ${scalarText(field.scalar, message.get(field))}`);
      return;
    case 'enum':
      out.push(`${indent}${field.name}: ${enumText(field.enum, message.get(field) as number)}`);
      return;
    case 'message':
      out.push(`${indent}${field.name} {`);
      writeFields(message.get(field), `${indent}  `, out);
      out.push(`${indent}}`);
      return;
    case 'list': {
      const list = message.get(field);
      const items = [...list];
      if (field.listKind === 'message') {
        out.push(`${indent}${field.name} [`);
        items.forEach((item, i) => {
          out.push(`${indent}  {`);
          writeFields(item as ReflectMessage, `${indent}    `, out);
          out.push(`${indent}  }${i < items.length - 1 ? ',' : ''}`);
        });
        out.push(`${indent}]`);
      } else {
        const text = items.map((item) => (field.listKind === 'enum' ? enumText(field.enum, item as number) : scalarText(field.scalar, item)));
        out.push(`${indent}${field.name}: [ ${text.join(', ')} ]`);
      }
      return;
    }
    case 'map': {
      const map = message.get(field);
      const entries = [...map.entries()].sort(([a], [b]) => String(a).localeCompare(String(b)));
      for (const [key, value] of entries) {
        out.push(`${indent}${field.name} {`);
        out.push(`${indent}  key: ${scalarText(field.mapKey, key)}`);
        if (field.mapKind === 'message') {
          out.push(`${indent}  value {`);
          writeFields(value as ReflectMessage, `${indent}    `, out);
          out.push(`${indent}  }`);
        } else if (field.mapKind === 'enum') out.push(`${indent}  value: ${enumText(field.enum, value as number)}`);
        else out.push(`${indent}  value: ${scalarText(field.scalar, value)}`);
        out.push(`${indent}}`);
      }
      return;
    }
  }
}

function enumText(desc: DescEnum, value: number): string {
  return desc.values.find((v) => v.number === value)?.name ?? String(value);
}

function scalarText(type: ScalarType, value: unknown): string {
  switch (type) {
    case ScalarType.STRING:
      return quote(Buffer.from(String(value), 'utf8'));
    case ScalarType.BYTES:
      return quote(Buffer.from(value as Uint8Array));
    case ScalarType.BOOL:
      return value ? 'true' : 'false';
    case ScalarType.FLOAT:
    case ScalarType.DOUBLE: {
      const n = value as number;
      if (Number.isNaN(n)) return 'nan';
      if (!Number.isFinite(n)) return n > 0 ? 'inf' : '-inf';
      return String(n);
    }
    default:
      return String(value); // integers, 64-bit ones as bigint or string
  }
}

/** Text format's string literal: printable ASCII as is, the rest as escapes (UTF-8 bytes in octal). */
function quote(bytes: Buffer): string {
  let text = '"';
  for (const byte of bytes) {
    if (byte === 0x22) text += '\\"';
    else if (byte === 0x5c) text += '\\\\';
    else if (byte === 0x0a) text += '\\n';
    else if (byte === 0x0d) text += '\\r';
    else if (byte === 0x09) text += '\\t';
    else if (byte >= 0x20 && byte < 0x7f) text += String.fromCharCode(byte);
    else text += `\\${byte.toString(8).padStart(3, '0')}`;
  }
  return `${text}"`;
}
