/**
 * The one request object's companions on the request path: what each door
 * knows of a call (RequestContext), the caller it admitted (InferContext),
 * and the path's face to the doors (InferencePath). The doors build these
 * from their wire formats (server/request-context.ts, server/http); nothing
 * below the doors re-wraps them.
 */
import type { ModelInferRequest, ModelInferResponse } from '../generated/grpc_service_pb.js';
import type { Caller } from '../security/caller.js';
import type { RequestView } from '../routing/arm-choice.js';

export interface RequestContext {
  readonly requestId: string;
  /** 32 lowercase hex digits, when the caller sent a valid traceparent. */
  readonly traceId: string | undefined;
  /** The call's gRPC deadline as epoch ms; undefined when the client set none. */
  readonly deadlineMs?: number | undefined;
  /**
   * When the client cancelled the call (epoch ms, performance clock as
   * workers' timings), or undefined while it has not; absent for a door that
   * cannot tell. A call ended by its deadline is not cancelled by the client.
   */
  readonly cancelledAtMs?: (() => number | undefined) | undefined;
}

/**
 * A request's context with the caller its door admitted (security/caller.ts),
 * and what routing reads: the request's headers (HTTP) or metadata (gRPC)
 * and its peer (`view`), and whether it is a route's shadow copy.
 */
export type InferContext = RequestContext & {
  readonly caller: Caller;
  /** Headers / metadata and peer, for a route's arm choice; absent: none. */
  readonly view?: RequestView | undefined;
  /**
   * A shadow copy of a routed request (inference/routing): it does not count
   * against the tenant's rate and in-flight limits, which are the clients',
   * and it is never cached, archived or fed to drift.
   */
  readonly shadow?: boolean | undefined;
};

/** The request path as the front doors call it: the runner itself, or the runner behind routes. */
export interface InferencePath {
  infer(request: ModelInferRequest, context: InferContext, method?: string): Promise<ModelInferResponse>;
  readonly isAccepting: boolean;
  onStopAccepting(listener: () => void): () => void;
}
