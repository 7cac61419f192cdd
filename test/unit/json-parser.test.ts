/**
 * JsonParser: large bodies parse on the worker thread with the inline parse's
 * errors; beyond --http-json-queue bodies waiting, one more is refused 503
 * with Retry-After. Runs the compiled worker (dist), as the server does.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { HttpFramingError } from '../../src/server/http/http-reply.js';
import { JsonParser } from '../../src/server/http/json-parser.js';
import { checkJsonValues, JsonValueCounter } from '../../src/server/http/json-body.js';

let parser: JsonParser | undefined;
afterEach(async () => {
  await parser?.close();
  parser = undefined;
});

const json = (value: unknown) => Buffer.from(JSON.stringify(value));

describe('JsonParser', () => {
  it('parses inline below inlineBytes and on the worker above, with the same errors', async () => {
    parser = new JsonParser({ inlineBytes: 16, maxQueued: 2 });
    expect(await parser.parse(json({ a: 1 }))).toEqual({ a: 1 });
    const large = { inputs: Array.from({ length: 1000 }, (_, i) => i) };
    expect(await parser.parse(json(large))).toEqual(large);
    await expect(parser.parse(Buffer.from('{"inputs": [1, 2'.padEnd(64, ' ')))).rejects.toThrow(/^malformed JSON in the request body: /);
  });

  it('refuses one more than maxQueued with 503 and Retry-After', async () => {
    parser = new JsonParser({ inlineBytes: 16, maxQueued: 1 });
    const body = json({ inputs: Array.from({ length: 100_000 }, (_, i) => i) });
    const first = parser.parse(body);
    const second = parser.parse(body).catch((err: unknown) => err);
    const refused = (await second) as HttpFramingError;
    expect(refused).toBeInstanceOf(HttpFramingError);
    expect(refused.status).toBe(503);
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.message).toMatch(/^the server is parsing 1 large JSON bodies, its limit \(--http-json-queue 1\); retry in 1 s/);
    expect(((await first) as { inputs: number[] }).inputs.length).toBe(100_000);
  });
});

describe('JSON value counting', () => {
  it('counts across pieces, strings and escapes included', () => {
    const counter = new JsonValueCounter(5);
    // "a,\"b[" is one string: its comma, quote and bracket are not structure.
    counter.feed(Buffer.from('{"k": "a,\\"'));
    counter.feed(Buffer.from('b[", "n": [1, 2'));
    expect(() => counter.feed(Buffer.from(', 3]}'))).toThrow(/^the JSON body holds more than 5 values; send large tensors as binary data/);
    expect(() => checkJsonValues(Buffer.from('[' + '{},'.repeat(10) + '{}]'), 10)).toThrow(/more than 10 values/);
    expect(() => checkJsonValues(Buffer.from('[1,2,3]'), 10)).not.toThrow();
  });
});
