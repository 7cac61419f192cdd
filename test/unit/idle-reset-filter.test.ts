/**
 * The idle-stream frame filter (src/server/idle-reset-filter.ts) on a client's
 * byte stream, cut at every possible point: frames a client sends on a stream
 * it has not opened are dropped whole; every other byte passes, in order.
 */
import { describe, expect, it } from 'vitest';
import { IdleStreamFrameFilter } from '../../src/server/idle-reset-filter.js';
import { CLIENT_PREFACE as PREFACE, http2Frame } from '../helpers/http2-frames.js';


/** A frame, in the argument order these cases read best in. */
const frame = (type: number, stream: number, payload: Buffer = Buffer.alloc(0), flags = 0) => http2Frame(type, flags, stream, payload);

const SETTINGS = frame(0x4, 0);
const rst = (stream: number) => frame(0x3, stream, Buffer.from([0, 0, 0, 8]));
const headers = (stream: number) => frame(0x1, stream, Buffer.from('hpack-block'), 0x4);
const data = (stream: number, bytes: number) => frame(0x0, stream, Buffer.alloc(bytes, 7), 0x1);
const windowUpdate = (stream: number) => frame(0x8, stream, Buffer.from([0, 0, 1, 0]));

/** The client's bytes, and what must reach the session. */
const kept = [PREFACE, SETTINGS, headers(1), data(1, 300), rst(1), headers(7), data(7, 5), rst(3), windowUpdate(0)];
const sent = [PREFACE, SETTINGS, rst(5), headers(1), data(1, 300), windowUpdate(9), rst(1), rst(11), headers(7), data(7, 5), rst(3), windowUpdate(0)];

function run(chunks: readonly Buffer[]): { out: Buffer; dropped: number } {
  const filter = new IdleStreamFrameFilter();
  const parts = chunks.flatMap((chunk) => filter.filter(chunk));
  return { out: Buffer.concat(parts), dropped: filter.dropped };
}

describe('idle-stream frame filter', () => {
  const whole = Buffer.concat(sent);
  const expected = Buffer.concat(kept);

  it('drops RST_STREAM and WINDOW_UPDATE on streams the client has not opened; keeps resets of opened ones', () => {
    // rst(5), windowUpdate(9), rst(11): above every opened id when sent. rst(3) comes after HEADERS(7): 3 is not idle then.
    expect(run([whole])).toEqual({ out: expected, dropped: 3 });
  });

  it('gives the same bytes however the stream is cut', () => {
    for (let cut = 1; cut < whole.length; cut += 1) {
      expect(run([whole.subarray(0, cut), whole.subarray(cut)]).out.equals(expected), `cut at ${cut}`).toBe(true);
    }
    const bytewise = Array.from({ length: whole.length }, (_, i) => whole.subarray(i, i + 1));
    expect(run(bytewise)).toEqual({ out: expected, dropped: 3 });
  });
});
