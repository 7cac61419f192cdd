/**
 * One HTTP request to a server under test and its whole answer: status,
 * headers, body bytes, and whether the agent reused a kept-alive socket.
 * A body is sent with its Content-Length; `chunks` are sent chunked, one
 * write each. Without an agent every request has a connection of its own.
 */
import http from 'node:http';

export interface HttpAnswer {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: Buffer;
  readonly reusedSocket: boolean;
}

export interface HttpSendOptions {
  readonly body?: Buffer | string;
  /** Sent with Transfer-Encoding: chunked, one write each. */
  readonly chunks?: Buffer[];
  readonly headers?: Record<string, string>;
  readonly agent?: http.Agent;
}

export function httpSend(port: number, method: string, route: string, options: HttpSendOptions = {}): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const body = options.body === undefined ? undefined : Buffer.from(options.body);
    const headers: Record<string, string> = { ...options.headers };
    if (body !== undefined) headers['content-length'] = String(body.byteLength);
    const request = http.request({ host: '127.0.0.1', port, method, path: route, headers, agent: options.agent ?? false }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () =>
        resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks), reusedSocket: request.reusedSocket }),
      );
    });
    request.on('error', reject);
    if (options.chunks !== undefined) {
      for (const chunk of options.chunks) request.write(chunk);
      request.end();
    } else {
      request.end(body);
    }
  });
}
