/**
 * ModelStreamInfer: many requests on one bidirectional call.
 *
 * Each `infer()` sends one request and resolves with its own response. The
 * server answers in completion order and echoes each request's `id`, so
 * responses are matched by id: a request without one gets a fresh UUID. A
 * request the server refuses rejects alone (StreamInferError, with the
 * server's `error_message`); the stream stays open, as in Triton. A failure of
 * the call itself (deadline, cancel, lost connection) rejects every request
 * still waiting, with the call's InferenceError.
 */
import { randomUUID } from 'node:crypto';
import { status, type ClientDuplexStream } from '@grpc/grpc-js';
import type { ModelInferRequest, ModelStreamInferResponse } from '../generated/grpc_service_pb.js';
import { InferenceError, StreamInferError, isServiceError } from './errors.js';
import { buildInferRequest, toInferResult, type InferRequestOptions, type InferResult } from './infer-messages.js';
import type { InferInput } from './tensors.js';

interface Waiter {
  readonly resolve: (result: InferResult) => void;
  readonly reject: (err: Error) => void;
}

export class InferStream {
  private readonly waiting = new Map<string, Waiter>();
  private failure: InferenceError | undefined;
  private ending = false;
  private readonly finished: Promise<void>;

  /** @internal Made by `HotpathClient.stream()`. */
  constructor(private readonly call: ClientDuplexStream<ModelInferRequest, ModelStreamInferResponse>) {
    call.on('data', (response: ModelStreamInferResponse) => this.answer(response));
    this.finished = new Promise<void>((resolve) => {
      call.on('error', (err: unknown) => {
        this.fail(isServiceError(err) ? InferenceError.fromServiceError(err) : new InferenceError(status.UNKNOWN, String(err)));
        resolve();
      });
      call.on('status', (result: { code: status; details: string }) => {
        // OK: the server ended the stream (its drain, or our end()); anything still waiting gets no answer now.
        if (result.code === status.OK) {
          this.fail(new InferenceError(status.UNAVAILABLE, 'the stream ended before this request was answered'));
          resolve();
        }
      });
    });
  }

  /** Requests waiting for their response. */
  get pending(): number {
    return this.waiting.size;
  }

  /** Sends one request; resolves with its response, or rejects with its error. */
  infer(model: string, inputs: Readonly<Record<string, InferInput>>, options: InferRequestOptions = {}): Promise<InferResult> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    if (this.ending) return Promise.reject(new Error('infer() after end(): the stream no longer takes requests'));
    const id = options.id ?? randomUUID();
    if (this.waiting.has(id)) {
      return Promise.reject(new TypeError(`a request with id '${id}' is still waiting on this stream; ids must be unique`));
    }
    let request: ModelInferRequest;
    try {
      request = buildInferRequest(model, inputs, { ...options, id });
    } catch (err) {
      return Promise.reject(err);
    }
    return new Promise<InferResult>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.call.write(request);
    });
  }

  /**
   * Sends no more requests (half-close) and resolves once the server has
   * answered every request sent and closed the stream.
   */
  async end(): Promise<void> {
    if (!this.ending) {
      this.ending = true;
      this.call.end();
    }
    await this.finished;
  }

  /** Abandons the stream: requests still waiting reject with CANCELLED. */
  cancel(): void {
    this.call.cancel();
  }

  private answer(response: ModelStreamInferResponse): void {
    const id = response.inferResponse?.id ?? '';
    const waiter = this.waiting.get(id);
    // An id we did not send cannot be matched; it is not ours to answer.
    if (waiter === undefined) return;
    this.waiting.delete(id);
    if (response.errorMessage !== '') {
      waiter.reject(new StreamInferError(id, response.errorMessage));
      return;
    }
    try {
      waiter.resolve(toInferResult(response.inferResponse!));
    } catch (err) {
      waiter.reject(err as Error);
    }
  }

  private fail(err: InferenceError): void {
    this.failure ??= err;
    for (const waiter of this.waiting.values()) waiter.reject(err);
    this.waiting.clear();
  }
}
