// Errors that cross from native code as data become typed NativeErrors whose
// stack starts at the JS caller (src/native/native-error.ts).
import { describe, expect, it } from 'vitest';

import { NativeError, unwrapNative, type NativeResult } from '../../src/native/native-error.js';

function wrapper(result: NativeResult<number>): number {
  return unwrapNative(result, 'wrapperOp', wrapper);
}

describe('unwrapNative', () => {
  it('returns the value of an ok result', () => {
    expect(unwrapNative({ ok: true, value: 7 }, 'op')).toBe(7);
  });

  it('throws a NativeError carrying code, message and operation', () => {
    let caught: unknown;
    try {
      wrapper({ ok: false, code: 'RESOURCE_EXHAUSTED', message: 'tenant a: 10 of 8 bytes' });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(NativeError);
    const error = caught as NativeError;
    expect(error.code).toBe('RESOURCE_EXHAUSTED');
    expect(error.nativeMessage).toBe('tenant a: 10 of 8 bytes');
    expect(error.operation).toBe('wrapperOp');
    expect(error.message).toBe('wrapperOp: RESOURCE_EXHAUSTED: tenant a: 10 of 8 bytes');
    // The stack starts at the caller of the wrapper, inside this test file.
    const frames = (error.stack ?? '').split('\n').slice(1);
    expect(frames[0]).toMatch(/native-error\.test\.ts/);
    expect(error.stack).not.toMatch(/at wrapper \(/);
  });

  it('uses a call site captured earlier, for async wrappers', () => {
    const callSite = { stack: 'Error\n    at capturedHere (somewhere.ts:1:1)' };
    expect(() => unwrapNative({ ok: false, code: 'INTERNAL', message: 'x' }, 'op', unwrapNative, callSite)).toThrow(
      expect.objectContaining({ stack: 'NativeError: op: INTERNAL: x\n    at capturedHere (somewhere.ts:1:1)' }),
    );
  });

  it('treats a malformed result as INTERNAL', () => {
    expect(() => unwrapNative(undefined as unknown as NativeResult<number>, 'op')).toThrowError(
      'op: INTERNAL: malformed result from the native addon: undefined',
    );
  });
});
