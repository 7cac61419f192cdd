// The container image's HEALTHCHECK: is hotpath ready, on whatever HTTP port it
// was told to use? The port is not fixed (8000 is Triton's default, KServe's
// runtime passes --http-port=8080, and a flag may be spelled several ways), so
// rather than re-parse the command line this asks the kernel which TCP ports
// the server process listens on (/proc/PID/fd sockets, matched against
// /proc/PID/net/tcp and tcp6) and asks GET /v2/health/ready on each. The gRPC
// and metrics ports answer that with an error, the HTTP door with 200 once
// the server is ready. Exit 0 when one port says ready, 1 otherwise, with one
// line saying what was asked.
//
//   node healthcheck.mjs [--pid PID]
//
// Without --pid, the server is every process whose command line runs hotpath's
// dist/src/cli.js (in the image, the entrypoint; PID 1 unless an init runs it).
// Plain JavaScript with no dependency: the runtime image runs it as it is.
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';

const TIMEOUT_MS = 2000;
const LISTEN = '0A';

/** Processes whose command line runs hotpath's CLI. */
function hotpathPids() {
  const pids = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    let argv;
    try {
      argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
    } catch {
      continue; // gone, or not ours to read
    }
    if (argv.some((arg) => arg.endsWith('dist/src/cli.js'))) pids.push(Number(entry));
  }
  return pids;
}

/** The inodes of the process's open sockets. */
function socketInodes(pid) {
  const inodes = new Set();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const match = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (match) inodes.add(match[1]);
    } catch {
      // closed meanwhile
    }
  }
  return inodes;
}

/** /proc/net/tcp's little-endian 32-bit words of an address, as a host to connect to. */
function hostOf(hex) {
  const words = hex.match(/.{8}/g).map((word) => word.match(/../g).reverse().join(''));
  if (hex.length === 8) {
    const v4 = words[0].match(/../g).map((byte) => parseInt(byte, 16)).join('.');
    return v4 === '0.0.0.0' ? '127.0.0.1' : v4;
  }
  const groups = words.join('').match(/.{4}/g).map((group) => parseInt(group, 16).toString(16));
  const v6 = groups.join(':');
  if (v6 === '0:0:0:0:0:0:0:0') return '[::1]';
  if (v6.startsWith('0:0:0:0:0:ffff:')) return hostOf(hex.slice(24));
  return `[${v6}]`;
}

/** The TCP listeners among `inodes`, from the process's own network namespace. */
function listeners(pid, inodes) {
  const found = [];
  for (const table of ['tcp', 'tcp6']) {
    let text;
    try {
      text = readFileSync(`/proc/${pid}/net/${table}`, 'utf8');
    } catch {
      continue; // no IPv6 in this kernel
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields.length < 10 || fields[3] !== LISTEN || !inodes.has(fields[9])) continue;
      const [address, port] = fields[1].split(':');
      found.push({ host: hostOf(address), port: parseInt(port, 16) });
    }
  }
  return found;
}

async function ready({ host, port }) {
  const url = `http://${host}:${port}/v2/health/ready`;
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(TIMEOUT_MS) });
    await response.body?.cancel();
    return { url, ok: response.status === 200, said: String(response.status) };
  } catch (err) {
    return { url, ok: false, said: err.cause?.code ?? err.name };
  }
}

async function main(argv) {
  const at = argv.indexOf('--pid');
  const pids = at >= 0 ? [Number(argv[at + 1])] : hotpathPids();
  if (!pids.every((pid) => Number.isInteger(pid) && pid > 0)) return { ok: false, line: `usage: healthcheck.mjs [--pid PID], got ${argv.join(' ')}` };
  if (pids.length === 0) return { ok: false, line: 'unhealthy: no hotpath process (dist/src/cli.js) is running' };
  const ports = [];
  for (const pid of pids) {
    try {
      ports.push(...listeners(pid, socketInodes(pid)));
    } catch (err) {
      return { ok: false, line: `unhealthy: cannot read process ${pid}'s sockets (${err.code ?? err.message})` };
    }
  }
  if (ports.length === 0) return { ok: false, line: `unhealthy: process ${pids.join(', ')} listens on no TCP port` };
  const answers = await Promise.all(ports.map(ready));
  const yes = answers.find((answer) => answer.ok);
  if (yes) return { ok: true, line: `ready: ${yes.url}` };
  return { ok: false, line: `unhealthy: ${answers.map((answer) => `${answer.url} ${answer.said}`).join(', ')}` };
}

const { ok, line } = await main(process.argv.slice(2));
console.log(line);
process.exit(ok ? 0 : 1);
