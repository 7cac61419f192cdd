/**
 * The gRPC door's admission: every handler of a service is wrapped so the
 * call passes the door's CallGate (security/caller.ts: restricted groups,
 * then API keys) before the handler runs. A refused call ends with the
 * gate's status and never reaches the handler; an admitted one carries its
 * Caller, which handlers read with `callerOf(call)` to scope what they
 * answer. A call that was never admitted has no caller, and `callerOf`
 * fails it (INTERNAL) rather than treat it as anyone.
 *
 * Refusals are logged (component 'auth') with the call, the peer and the
 * reason, never a header's value.
 */
import type {
  Metadata,
  ServerDuplexStream,
  ServerUnaryCall,
  ServerWritableStream,
  ServiceDefinition,
  sendUnaryData,
  UntypedHandleCall,
  UntypedServiceImplementation,
} from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { classifyError, internal, toServiceError } from '../common/serving-error.js';
import type { Caller, CallGate, HeaderLookup } from '../security/caller.js';
import { isRpcName, type RpcName } from '../security/restricted-api.js';

const admitted = new WeakMap<object, Caller>();

/** The caller the gate admitted for this grpc-js call. */
export function callerOf(call: object): Caller {
  const caller = admitted.get(call);
  if (caller === undefined) throw internal('the call reached its handler without passing admission');
  return caller;
}

/** A grpc-js Metadata as a header lookup (first string value). */
export function metadataHeaders(metadata: Metadata): HeaderLookup {
  return (name) => {
    const value = metadata.get(name)[0];
    return typeof value === 'string' ? value : undefined;
  };
}

export interface AdmissionOptions {
  readonly gate: CallGate;
  readonly logger: Logger;
  /** The gate's name of a method of this service; default: the method's own name. */
  readonly rpcName?: (method: string) => string;
}

type AnyCall = ServerUnaryCall<unknown, unknown> | ServerWritableStream<unknown, unknown> | ServerDuplexStream<unknown, unknown>;
type AnyHandler = (call: AnyCall, callback?: sendUnaryData<unknown>) => void;

/**
 * `implementation` with every method of `definition` behind the gate. A
 * method the gate does not know is refused outright (a new RPC must be given
 * a group in restricted-api.ts before it can serve).
 */
export function admitService(
  definition: ServiceDefinition,
  implementation: UntypedServiceImplementation,
  options: AdmissionOptions,
): UntypedServiceImplementation {
  const log = options.logger.child({ component: 'auth' });
  const guarded: UntypedServiceImplementation = {};
  for (const [method, attributes] of Object.entries(definition)) {
    // grpc-js finds a handler by the method's name or its original (lower-camel) name.
    const key = implementation[method] !== undefined ? method : attributes.originalName;
    const handler = key === undefined ? undefined : (implementation[key] as AnyHandler | undefined);
    if (key === undefined || handler === undefined) continue;
    const name = options.rpcName?.(method) ?? method;
    const rpc: RpcName | undefined = isRpcName(name) ? name : undefined;
    const wrapped: AnyHandler = (call, callback) => {
      let caller: Caller;
      try {
        if (rpc === undefined) throw internal(`RPC ${method} has no protocol group; it cannot be admitted`);
        caller = options.gate.admit(rpc, metadataHeaders(call.metadata));
      } catch (err) {
        const { kind, message } = classifyError(err);
        log.info({ door: 'grpc', rpc: method, peer: call.getPeer(), kind, reason: message }, 'call refused');
        // A streamed response ends with the status of the error emitted on it (grpc-js).
        if (attributes.responseStream) call.emit('error', toServiceError(err));
        else callback?.(toServiceError(err));
        return;
      }
      admitted.set(call, caller);
      handler(call, callback);
    };
    guarded[key] = wrapped as UntypedHandleCall;
  }
  return guarded;
}
