// Typed wrapper for native/napi/failure_vocabulary_binding.cc: the native
// side's failure vocabulary (every code name the addon reports, with its
// status code and kind), as the native tables define it. Read by the test
// that holds the TypeScript tables (common/error-kinds.ts) to the native
// ones, and by anyone debugging a mismatch; never on the request path.
//
// Pure read of static tables; safe in any thread.
import { nativeAddon, type LoadedAddon } from './loader.js';

export interface NativeFailureVocabulary {
  /** Every native FailureKind name (a subset of ErrorKind). */
  readonly kinds: readonly string[];
  /** Every StatusCode; OK's kind is null. */
  readonly statusCodes: readonly { readonly name: string; readonly kind: string | null }[];
  /** Every batcher RejectKind, with the code it is answered with. */
  readonly rejections: readonly { readonly name: string; readonly code: string; readonly kind: string }[];
  /** Every ExecutionFailure, with its code and whether a worker may report it by name. */
  readonly executionFailures: readonly {
    readonly name: string;
    readonly code: string;
    readonly kind: string;
    readonly workerMayReport: boolean;
  }[];
}

interface VocabularyBinding {
  failureVocabulary(): NativeFailureVocabulary;
}

/** The addon's failure vocabulary; undefined for an addon built before it had one. */
export function nativeFailureVocabulary(addon: LoadedAddon = nativeAddon()): NativeFailureVocabulary | undefined {
  const binding = addon.binding as unknown as Partial<VocabularyBinding>;
  return typeof binding.failureVocabulary === 'function' ? binding.failureVocabulary() : undefined;
}
