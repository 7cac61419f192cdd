// One failure vocabulary for C++ and TypeScript: the addon exports its tables
// (native/napi/failure_vocabulary_binding.cc) and this holds the TypeScript
// ones (src/common/error-kinds.ts) to them, name for name and kind for kind,
// for both builds. A code added on one side only fails here.
import { status } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';

import {
  ERROR_KINDS,
  EXECUTION_FAILURE_KINDS,
  NATIVE_STATUS_KINDS,
  REJECTION_KINDS,
  WORKER_FAILURES,
  grpcStatusOf,
  isErrorKind,
} from '../../src/common/error-kinds.js';
import { nativeFailureVocabulary, type NativeFailureVocabulary } from '../../src/native/failure-vocabulary.js';
import { loadAddon } from '../../src/native/loader.js';
import { rejectionCodes } from '../../src/native/batcher-errors.js';
import { addonBuilds } from './addon-builds.js';

const sorted = (names: Iterable<string>) => [...names].sort();

describe.each(addonBuilds)('$kind build: failure vocabulary', (build) => {
  const vocabulary = (): NativeFailureVocabulary => {
    const exported = nativeFailureVocabulary(loadAddon({ path: build.path }));
    if (exported === undefined) throw new Error(`${build.path} exports no failureVocabulary`);
    return exported;
  };

  it.skipIf(!build.present)('every native kind is an ErrorKind', () => {
    const { kinds } = vocabulary();
    expect(kinds.length).toBeGreaterThan(0);
    for (const kind of kinds) expect(ERROR_KINDS).toContain(kind);
  });

  it.skipIf(!build.present)('status codes: the same names, with the same kinds', () => {
    const { statusCodes } = vocabulary();
    const failures = statusCodes.filter((code) => code.name !== 'OK');
    expect(statusCodes.find((code) => code.name === 'OK')?.kind).toBeNull();
    expect(sorted(failures.map((code) => code.name))).toEqual(sorted(Object.keys(NATIVE_STATUS_KINDS)));
    for (const { name, kind } of failures) expect([name, NATIVE_STATUS_KINDS[name as keyof typeof NATIVE_STATUS_KINDS]]).toEqual([name, kind]);
  });

  it.skipIf(!build.present)('rejection reasons: the same names, codes and kinds', () => {
    const { rejections } = vocabulary();
    expect(sorted(rejections.map((reason) => reason.name))).toEqual(sorted(Object.keys(REJECTION_KINDS)));
    for (const { name, code, kind } of rejections) {
      const key = name as keyof typeof REJECTION_KINDS;
      expect([name, REJECTION_KINDS[key], rejectionCodes[key]]).toEqual([name, kind, code]);
    }
  });

  it.skipIf(!build.present)('execution failures: the same names and kinds, and the same names a worker may report', () => {
    const { executionFailures } = vocabulary();
    expect(sorted(executionFailures.map((failure) => failure.name))).toEqual(sorted(Object.keys(EXECUTION_FAILURE_KINDS)));
    for (const { name, kind } of executionFailures) {
      expect([name, EXECUTION_FAILURE_KINDS[name as keyof typeof EXECUTION_FAILURE_KINDS]]).toEqual([name, kind]);
    }
    expect(sorted(executionFailures.filter((failure) => failure.workerMayReport).map((failure) => failure.name))).toEqual(
      sorted(WORKER_FAILURES),
    );
  });

  it.skipIf(!build.present)("every failure's code is the gRPC status of its kind", () => {
    // A code and a kind that disagree would answer one failure two ways,
    // depending on which of them a caller read.
    const { statusCodes, rejections, executionFailures } = vocabulary();
    const entries: { name: string; code: string; kind: string }[] = [
      ...statusCodes.flatMap(({ name, kind }) => (kind === null ? [] : [{ name, code: name, kind }])),
      ...rejections,
      ...executionFailures.filter(({ code }) => code !== 'OK'),
    ];
    for (const { name, code, kind } of entries) {
      if (!isErrorKind(kind)) throw new Error(`${name}: '${kind}' is no ErrorKind`);
      expect([name, status[grpcStatusOf(kind)]]).toEqual([name, code]);
    }
  });
});
