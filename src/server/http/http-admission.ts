/**
 * The HTTP door's admission, as admission.ts is gRPC's: each endpoint admits
 * its request through the door's CallGate (restricted groups from
 * --http-restricted-api, then API keys) before it reads a body or runs its
 * operation, and runs the operation for the Caller admitted. Refusals are
 * logged (component 'auth') rate-limited with counts (observability/refusal-log.ts),
 * with the path and the reason, never a header's value.
 */
import type { IncomingMessage } from 'node:http';
import type { RefusalLog } from '../../observability/refusal-log.js';
import { classifyError } from '../../common/serving-error.js';
import type { Caller, CallGate, HeaderLookup } from '../../security/caller.js';
import type { RpcName } from '../../security/restricted-api.js';

/** A request's headers as a lookup (Node lower-cases names; the first of repeated values). */
export function requestHeaders(request: IncomingMessage): HeaderLookup {
  return (name) => {
    const value = request.headers[name];
    return Array.isArray(value) ? value[0] : value;
  };
}

export class HttpAdmission {
  /** `refusals`: the door's rate-limited refusal log (component 'auth'). */
  constructor(
    private readonly gate: CallGate,
    private readonly refusals: RefusalLog,
  ) {}

  /** The caller of `request` for the call `rpc`; throws the gate's refusal (restricted, unauthenticated). */
  admit(rpc: RpcName, request: IncomingMessage): Caller {
    try {
      return this.gate.admit(rpc, requestHeaders(request));
    } catch (err) {
      const { kind, message } = classifyError(err);
      const path = (request.url ?? '/').split('?')[0]!.slice(0, 256);
      this.refusals.refused(`http:${kind}`, { door: 'http', rpc, path, peer: request.socket.remoteAddress, kind, reason: message }, 'call refused');
      throw err;
    }
  }
}
