// Typed executor outcomes. An ExecutorRunError is a NativeError whose `code`
// is the gRPC-style status of the failure, plus the device fault class that
// tells the caller what to do next: 'transient' (re-run elsewhere, the device
// recovers), 'sticky' (the device is gone for this process), 'none' (not the
// device's fault, e.g. an embedding id out of range).
import { NativeError, type NativeStatusCode } from './native-error.js';
import type { FaultKind } from './executor-binding-types.js';

export type { FaultKind } from './executor-binding-types.js';

export class ExecutorRunError extends NativeError {
  constructor(
    code: NativeStatusCode,
    message: string,
    readonly fault: FaultKind,
    readonly model: string,
  ) {
    super(code, message, 'run');
    // NativeError declares `name` as a literal; this keeps its own in stacks.
    Object.defineProperty(this, 'name', { value: 'ExecutorRunError', enumerable: false, configurable: true, writable: false });
  }
}
