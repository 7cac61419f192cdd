/**
 * Independent probes of a running server: plain HTTP GETs, a Prometheus text
 * parser, and a grpc.health.v1 Check built from raw bytes (no hotpath code).
 */
import http from 'node:http';
import * as grpc from '@grpc/grpc-js';

export async function httpGet(port: number, route: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = http.get({ host: '127.0.0.1', port, path: route, agent: false }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
    });
    request.on('error', reject);
  });
}

export async function httpJson(port: number, route: string): Promise<{ status: number; json: any }> {
  const { status, body } = await httpGet(port, route);
  return { status, json: JSON.parse(body) };
}

/** `name{labels}` → value, for every sample line of a Prometheus exposition. */
export function parseMetrics(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const split = line.lastIndexOf(' ');
    samples.set(line.slice(0, split), Number(line.slice(split + 1)));
  }
  return samples;
}

export async function scrape(port: number): Promise<Map<string, number>> {
  const { status, body } = await httpGet(port, '/metrics');
  if (status !== 200) throw new Error(`GET /metrics answered ${status}: ${body}`);
  return parseMetrics(body);
}

/** grpc.health.v1.Health/Check for the overall service: 1 = SERVING, 2 = NOT_SERVING. */
export async function healthCheck(address: string): Promise<number> {
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  try {
    const bytes = await new Promise<Buffer>((resolve, reject) => {
      // HealthCheckRequest{service: ""} is the empty message; the response is field 1 (enum).
      client.makeUnaryRequest('/grpc.health.v1.Health/Check', (b: Buffer) => b, (b: Buffer) => b, Buffer.alloc(0),
        (err, response) => (err ? reject(err) : resolve(response as Buffer)));
    });
    return bytes.length >= 2 && bytes[0] === 0x08 ? bytes[1]! : 0;
  } finally {
    client.close();
  }
}

export const SERVING = 1;
export const NOT_SERVING = 2;
