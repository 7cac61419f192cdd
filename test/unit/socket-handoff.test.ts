/**
 * duplicateSocket (src/native/socket-handoff.ts): the front-door acceptor's
 * hand-off of a connection to a door thread. A duplicate carries the same
 * connection after the original closes; a descriptor that is not an open
 * socket is refused with a typed error, never a crash.
 */
import { closeSync, openSync } from 'node:fs';
import { once } from 'node:events';
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { NativeError } from '../../src/native/native-error.js';
import { duplicateSocket } from '../../src/native/socket-handoff.js';

function descriptorOf(socket: net.Socket): number {
  return (socket as unknown as { _handle: { fd: number } })._handle.fd;
}

describe('duplicateSocket', () => {
  it('hands an accepted connection over: the duplicate reads and writes after the original is destroyed', async () => {
    const accepted: net.Socket[] = [];
    const server = net.createServer({ pauseOnConnect: true }, (socket) => accepted.push(socket));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const client = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
    await once(client, 'connect');
    while (accepted.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    const original = accepted[0]!;
    const fd = duplicateSocket(descriptorOf(original));
    expect(fd).not.toBe(descriptorOf(original));
    original.destroy();
    const adopted = new net.Socket({ fd, readable: true, writable: true });
    client.write('ping');
    const [got] = (await once(adopted, 'data')) as [Buffer];
    expect(got.toString()).toBe('ping');
    adopted.write('pong');
    const [back] = (await once(client, 'data')) as [Buffer];
    expect(back.toString()).toBe('pong');
    adopted.destroy();
    client.destroy();
    server.close();
  });

  it('refuses a descriptor that is not an open socket, with the reason', () => {
    const file = openSync(import.meta.filename, 'r');
    try {
      expect(() => duplicateSocket(file)).toThrow(NativeError);
      expect(() => duplicateSocket(file)).toThrow(/INVALID_ARGUMENT: descriptor \d+ is not a socket/);
    } finally {
      closeSync(file);
    }
    expect(() => duplicateSocket(2 ** 31 - 1)).toThrow(/NOT_FOUND: fcntl\(F_DUPFD_CLOEXEC\)\(2147483647\): Bad file descriptor/);
  });

  it('refuses values that are not descriptor numbers before the addon sees them', () => {
    for (const bad of [-1, 1.5, Number.NaN, 2 ** 31]) expect(() => duplicateSocket(bad)).toThrow(RangeError);
  });
});
