// echo (src/common/echo.ts): request-supplied names in errors and logs are cut
// to 256 characters with a marker counting what was cut, and control or
// invisible formatting characters are escaped; and the request path uses it,
// so a huge name never makes a huge message.

import { create } from '@bufbuild/protobuf';
import { describe, expect, it } from 'vitest';
import { boundMessage, echo, echoField, echoList, ECHO_MAX_CHARS, LIST_MAX_NAMES, MESSAGE_MAX_CHARS } from '../../src/common/echo.js';
import { invalidArgument, toServiceError } from '../../src/common/serving-error.js';
import { ModelInferRequestSchema } from '../../src/generated/grpc_service_pb.js';
import { DataType, ModelConfigSchema } from '../../src/generated/model_config_pb.js';
import { prepareInference } from '../../src/tensor/infer-request.js';
import { signatureFromConfig } from '../../src/tensor/model-signature.js';

describe('echoList', () => {
  it('names at most LIST_MAX_NAMES, each escaped and cut, and counts the rest', () => {
    expect(echoList([])).toBe('(none)');
    expect(echoList(['a', 'b\n'])).toBe('a, b\\n');
    const names = Array.from({ length: LIST_MAX_NAMES + 5 }, (_, i) => `m${i}`);
    expect(echoList(names)).toBe(`${names.slice(0, LIST_MAX_NAMES).join(', ')}, … (+5 more)`);
    const huge = echoList(['x'.repeat(8 * 1024 * 1024), '\u202e']);
    expect(huge).toBe(`${'x'.repeat(ECHO_MAX_CHARS)}…(+${8 * 1024 * 1024 - ECHO_MAX_CHARS} chars), \\u202E`);
  });
});

describe('echo', () => {
  it('quotes a short name unchanged', () => {
    expect(echo('ctr_mlp')).toBe("'ctr_mlp'");
    expect(echoField('ctr_mlp')).toBe('ctr_mlp');
    expect(echo('')).toBe("''");
    expect(echoField(undefined)).toBeUndefined();
  });

  it('cuts at 256 characters and says how many were cut', () => {
    const name = 'm'.repeat(100 * 1024);
    const shown = echo(name);
    expect(shown).toBe(`'${'m'.repeat(ECHO_MAX_CHARS)}'…(+${100 * 1024 - ECHO_MAX_CHARS} chars)`);
    expect(echoField(name)).toBe(`${'m'.repeat(256)}…(+102144 chars)`);
    // Exactly the limit: nothing cut, no marker.
    expect(echo('a'.repeat(256))).toBe(`'${'a'.repeat(256)}'`);
    expect(echo('a'.repeat(257))).toBe(`'${'a'.repeat(256)}'…(+1 chars)`);
  });

  it('escapes line breaks, tabs, other C0 and C1 controls and DEL', () => {
    expect(echo('a\nb\rc\td')).toBe("'a\\nb\\rc\\td'");
    expect(echo('\x00\x1b[31m\x7f\x85\x9f')).toBe("'\\x00\\x1B[31m\\x7F\\x85\\x9F'");
    // A forged second log line stays on the first.
    expect(echoField('x\n{"level":50,"msg":"forged"}')).toBe('x\\n{"level":50,"msg":"forged"}');
  });

  it('escapes backslashes, and quotes inside the quoted form only', () => {
    expect(echo("it's\\here")).toBe("'it\\'s\\\\here'");
    expect(echoField("it's")).toBe("it's");
  });

  it('keeps letters and emoji, escapes invisible reordering characters and lone surrogates', () => {
    expect(echo('héllo-日本語-🙂')).toBe("'héllo-日本語-🙂'");
    expect(echo('a\u202eb\u2028c\u2066d\u200f')).toBe("'a\\u202Eb\\u2028c\\u2066d\\u200F'");
    expect(echo('x\ud800y')).toBe("'x\\uD800y'");
  });

  it('counts escapes against the limit and never splits an escape or a surrogate pair', () => {
    const newlines = echo('\n'.repeat(200));
    // Each \n shows as two characters: 128 fit in 256.
    expect(newlines).toBe(`'${'\\n'.repeat(128)}'…(+72 chars)`);
    const emoji = echoField('🙂'.repeat(200)); // two UTF-16 units each
    expect(emoji).toBe(`${'🙂'.repeat(128)}…(+72 chars)`);
  });
});

describe('boundMessage', () => {
  it('leaves ordinary messages alone and cuts a huge one with a marker', () => {
    expect(boundMessage('short')).toBe('short');
    const long = 'x'.repeat(MESSAGE_MAX_CHARS + 10);
    expect(boundMessage(long)).toBe(`${'x'.repeat(MESSAGE_MAX_CHARS)}…(+10 chars)`);
  });

  it('bounds every message a client is sent', () => {
    const failure = toServiceError(invalidArgument('y'.repeat(50_000)));
    expect(failure.details.length).toBeLessThan(MESSAGE_MAX_CHARS + 30);
  });
});

describe('request names in errors are bounded', () => {
  const signature = signatureFromConfig(
    create(ModelConfigSchema, {
      name: 'ctr',
      maxBatchSize: 8,
      input: [{ name: 'features', dataType: DataType.TYPE_FP32, dims: [4n] }],
      output: [{ name: 'score', dataType: DataType.TYPE_FP32, dims: [1n] }],
    }),
  );
  const huge = 'n'.repeat(100 * 1024);
  const attempt = (init: Parameters<typeof create<typeof ModelInferRequestSchema>>[1]) => {
    try {
      prepareInference(create(ModelInferRequestSchema, { modelName: 'ctr', ...init }), signature);
    } catch (err) {
      return (err as Error).message;
    }
    throw new Error('expected a rejection');
  };
  const features = { name: 'features', datatype: 'FP32', shape: [1n, 4n] };
  const raw = [new Uint8Array(16)];

  it('input, output, datatype and parameter values', () => {
    const messages = [
      attempt({ inputs: [{ ...features, name: huge }], rawInputContents: raw }),
      attempt({ inputs: [features], rawInputContents: raw, outputs: [{ name: huge }] }),
      attempt({ inputs: [{ ...features, datatype: huge }], rawInputContents: raw }),
      attempt({
        inputs: [features],
        rawInputContents: raw,
        parameters: { priority: { parameterChoice: { case: 'stringParam', value: huge } } },
      }),
    ];
    for (const message of messages) {
      expect(message.length).toBeLessThan(600);
      expect(message).toContain('…(+102144 chars)');
    }
    expect(messages[0]).toMatch(/^unknown input 'n{256}'…\(\+102144 chars\) for model 'ctr'/);
    expect(messages[3]).toMatch(/^parameter 'priority': expected an unsigned integer \(uint64_param or int64_param >= 0\), got string_param 'n{256}'…/);
  });

  it('a control character in an input name cannot start a new line', () => {
    const message = attempt({ inputs: [{ ...features, name: 'a\nERROR forged' }], rawInputContents: raw });
    expect(message).toMatch(/^unknown input 'a\\nERROR forged' for model 'ctr'/);
    expect(message).not.toContain('\n');
  });
});
