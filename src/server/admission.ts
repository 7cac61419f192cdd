/**
 * The gRPC door's admission, as a grpc-js server interceptor: every call
 * passes the door's CallGate (security/caller.ts: restricted groups, then API
 * keys) and, for ModelInfer, its tenant's limits, decided from the metadata
 * alone, before grpc-js reads the message.
 *
 * Why an interceptor and not a wrapped handler: grpc-js calls a unary handler
 * only after it has received and decoded the whole message, so a check in the
 * handler lets a keyless client make the server hold and decode up to
 * --max-message-size per call. grpc-js creates each call with its HTTP/2
 * stream paused (BaseServerInterceptingCall) and resumes it only when the
 * handler's listener asks for the message (startRead, after metadata). A
 * refused call never gets there: the interceptor answers with a status
 * (trailers-only), grpc-js then drains and drops the stream's later DATA
 * frames undecoded, and the client, seeing the status, resets the stream. So
 * a refused call costs its headers and at most one flow-control window.
 *
 * The admitted Caller reaches the handler through the call's own objects:
 * the Metadata instance the interceptor passes on is the very object grpc-js
 * gives the handler as `call.metadata` (server.ts handleUnary /
 * handleBidiStreaming build the call object from it), so the caller rides on
 * that instance, under a symbol private to this module. No header is
 * involved: nothing a client sends can name a caller (its headers live in the
 * Metadata's map, never in its properties, and no client can make this
 * symbol). A call that was never admitted has no caller, and `callerOf`
 * fails it (INTERNAL) rather than treat it as anyone. (A WeakMap keyed on the
 * instance did the same for about 0.8 µs a call, measured: its ephemeron
 * table's inserts and their garbage collection; the property is one write.)
 *
 * Refusals are logged (component 'auth') rate-limited with counts
 * (observability/refusal-log.ts), with the call, the peer and the reason,
 * never a header's value.
 */
import {
  Metadata,
  ServerInterceptingCall,
  status,
  type ServerInterceptingCallInterface,
  type ServerInterceptor,
  type ServerMethodDefinition,
  type ServiceDefinition,
} from '@grpc/grpc-js';
import { classifyError, internal, toServiceError } from '../common/serving-error.js';
import type { RefusalLog } from '../observability/refusal-log.js';
import type { Caller, CallGate, HeaderLookup } from '../security/caller.js';
import { isRpcName, type RpcName } from '../security/restricted-api.js';
import type { TenantLimiter } from '../security/tenant-limits.js';
import { UndecodedMessage } from './grpc-service-definition.js';
import { firstString } from './request-context.js';

// Where the admitted caller rides on the Metadata instance grpc-js hands the handler; it goes with the call.
const ADMITTED = Symbol('hotpath.admittedCaller');

/** A call's Metadata as admission leaves it. */
type AdmittedMetadata = Metadata & { [ADMITTED]?: Caller };

/** The caller the gate admitted for this grpc-js call (any handler call object: it carries `metadata`). */
export function callerOf(call: { readonly metadata: Metadata }): Caller {
  const caller = (call.metadata as AdmittedMetadata)[ADMITTED];
  if (caller === undefined) throw internal('the call reached its handler without passing admission');
  return caller;
}

/** A grpc-js Metadata as a header lookup (first string value). */
export function metadataHeaders(metadata: Metadata): HeaderLookup {
  return (name) => firstString(metadata, name);
}

export interface AdmissionOptions {
  readonly gate: CallGate;
  /** Rate-limited refusal lines (component 'auth'). */
  readonly refusals: RefusalLog;
  /** Tenants' rate and in-flight limits, checked for ModelInfer before its message is read; undefined: none. */
  readonly limits?: TenantLimiter | undefined;
}

/** RPCs whose tenant limits are checked at admission: one request per call, so a refusal costs no body. */
const LIMITED_AT_ADMISSION: ReadonlySet<RpcName> = new Set<RpcName>(['ModelInfer']);

/**
 * The gRPC door's admission. `interceptor` goes into `new Server({interceptors})`;
 * `register` names each service's methods for the gate (a method of a path
 * that was not registered is refused: a new RPC must be given a protocol
 * group in restricted-api.ts before it can serve).
 */
export class GrpcAdmission {
  /** Method path (`/pkg.Service/Method`) → the gate's RPC name; undefined: known path, no group. */
  private readonly rpcs = new Map<string, { readonly method: string; readonly rpc: RpcName | undefined }>();

  constructor(private readonly options: AdmissionOptions) {}

  /** Names the methods of `definition` for the gate; `rpcName` maps a method to its name in restricted-api.ts (default: itself). */
  register(definition: ServiceDefinition, rpcName: (method: string) => string = (method) => method): void {
    for (const [method, attributes] of Object.entries(definition)) {
      const name = rpcName(method);
      this.rpcs.set(attributes.path, { method, rpc: isRpcName(name) ? name : undefined });
    }
  }

  readonly interceptor: ServerInterceptor = (descriptor: ServerMethodDefinition<unknown, unknown>, call: ServerInterceptingCallInterface) =>
    new ServerInterceptingCall(call, {
      start: (next) => {
        next({
          onReceiveMetadata: (metadata, pass) => {
            const caller = this.decide(descriptor.path, metadata, call);
            if (caller === undefined) return; // refused: the status is sent, the message is never read
            (metadata as AdmittedMetadata)[ADMITTED] = caller;
            pass(metadata);
          },
          // A unary request its guard refused (grpc-service-definition.ts) ends the call here, with
          // the guard's status; on a request stream the handler answers it as that request's error.
          onReceiveMessage: (message, pass) => {
            if (descriptor.requestStream || !(message instanceof UndecodedMessage)) {
              pass(message);
              return;
            }
            this.refuse(this.rpcs.get(descriptor.path)?.method ?? descriptor.path, message.refusal, call);
          },
        });
      },
    });

  /** The admitted caller, or undefined after sending the refusal's status on `call`. */
  private decide(path: string, metadata: Metadata, call: ServerInterceptingCallInterface): Caller | undefined {
    const known = this.rpcs.get(path);
    const method = known?.method ?? path;
    try {
      if (known?.rpc === undefined) throw internal(`RPC ${method} has no protocol group; it cannot be admitted`);
      const caller = this.options.gate.admit(known.rpc, metadataHeaders(metadata));
      // The model's tenant is the caller's own for a scoped caller; an admin's
      // or an open caller's requests are limited by model, once resolved (InferenceRunner).
      if (LIMITED_AT_ADMISSION.has(known.rpc) && !caller.admin && caller.tenant !== undefined) {
        this.options.limits?.check(caller.tenant);
      }
      return caller;
    } catch (err) {
      this.refuse(method, err, call);
      return undefined;
    }
  }

  /** Ends `call` with the status of `err`, and logs the refusal (rate-limited). */
  private refuse(method: string, err: unknown, call: ServerInterceptingCallInterface): void {
    const { kind, message } = classifyError(err);
    this.options.refusals.refused(`grpc:${kind}`, { door: 'grpc', rpc: method, peer: call.getPeer(), kind, reason: message }, 'call refused');
    const failure = toServiceError(err);
    call.sendStatus({ code: failure.code ?? status.INTERNAL, details: failure.details, metadata: new Metadata() });
  }
}
