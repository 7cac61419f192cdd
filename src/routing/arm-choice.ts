/**
 * Which arm of a route answers a request. In order:
 *   1. the header, when present and mapped to an arm (a mapping to a
 *      rolled-back arm goes to the stable arm instead; an unmapped value falls
 *      through to the next steps);
 *   2. the sticky key (a header / metadata value), hashed over the weights by
 *      weighted rendezvous hashing;
 *   3. with no key and `sticky_fallback: address`: x-forwarded-for's first
 *      entry, else the peer address, hashed the same way;
 *   4. otherwise a weighted random choice.
 * Steps 2-4 never choose an arm whose current weight is 0 (configured 0, or
 * rolled back).
 *
 * Weighted rendezvous (highest random weight): each arm scores
 * `weight / -ln(u)` with `u` = the key's hash under that arm's seed, in (0, 1);
 * the highest score wins. -ln(u) is exponentially distributed, so arm i wins
 * with probability weight_i / Σweights, a key's arm depends only on the key,
 * the arm names and the weights, and raising one arm's weight only moves keys
 * to that arm: 50/50 → 60/40 moves 10% of keys. Adding an arm takes its share
 * from every other arm in proportion. Renaming an arm reshuffles its keys.
 *
 * Pure: the RNG is injected. Nothing here allocates per request beyond the
 * header lookups.
 */
import type { HeaderRule, StickyFallback } from './routes-config.js';
import { hashUnit, seedOf } from './key-hash.js';

/** An arm as arm choice sees it: its current weight and its hash seed. */
export interface WeightedArm {
  readonly name: string;
  /** Current weight: the configured one, or 0 once rolled back. */
  readonly weight: number;
  /** Rolled back: never chosen, and a header mapped to it goes to the stable arm. */
  readonly rolledBack: boolean;
  /** seedOf(name), precomputed. */
  readonly seed: number;
}

export function weightedArm(name: string, weight: number, rolledBack = false): WeightedArm {
  return Object.freeze({ name, weight: rolledBack ? 0 : weight, rolledBack, seed: seedOf(name) });
}

/** The request as arm choice reads it. */
export interface RequestView {
  /**
   * A header (HTTP) or metadata (gRPC) value by lower-case name: the first
   * value when repeated, undefined when absent.
   */
  header(name: string): string | undefined;
  /** The peer's address, without port (see peerAddress); undefined when unknown. */
  readonly peer?: string | undefined;
}

export interface ChoicePolicy {
  readonly header: HeaderRule | undefined;
  readonly stickyKey: string | undefined;
  readonly stickyFallback: StickyFallback;
  /** Where a header mapped to a rolled-back arm goes. */
  readonly stableArm: string;
}

/** How the arm was chosen: a bounded set, usable as a log field or metric label. */
export type ChoiceReason = 'header' | 'header_rolled_back' | 'sticky_key' | 'address' | 'random';

export interface ArmChoice {
  /** Index into the arms given. */
  readonly index: number;
  readonly reason: ChoiceReason;
}

/**
 * The index of the arm `key` lands on by weighted rendezvous hashing; -1 when
 * no arm has a positive weight.
 */
export function rendezvous(arms: readonly WeightedArm[], key: string): number {
  let best = -1;
  let bestCost = Infinity;
  for (let i = 0; i < arms.length; i++) {
    const arm = arms[i]!;
    if (!(arm.weight > 0)) continue;
    // Lowest -ln(u)/w is the highest w/-ln(u); u in (0,1) so the cost is finite and > 0.
    const cost = -Math.log(hashUnit(key, arm.seed)) / arm.weight;
    if (cost < bestCost) {
      bestCost = cost;
      best = i;
    }
  }
  return best;
}

/** The index of an arm drawn with probability proportional to its weight; -1 when all are 0. */
export function weightedRandom(arms: readonly WeightedArm[], random: () => number): number {
  let total = 0;
  for (const arm of arms) if (arm.weight > 0) total += arm.weight;
  if (!(total > 0)) return -1;
  let point = random() * total;
  let last = -1;
  for (let i = 0; i < arms.length; i++) {
    const weight = arms[i]!.weight;
    if (!(weight > 0)) continue;
    last = i;
    if (point < weight) return i;
    point -= weight;
  }
  return last; // rounding at the top end
}

/**
 * The address to hash when there is no sticky key: x-forwarded-for's first
 * entry (the original client behind proxies), else the peer; undefined when
 * neither is known.
 */
export function clientAddress(request: RequestView): string | undefined {
  const forwarded = request.header('x-forwarded-for');
  if (forwarded !== undefined) {
    const first = forwarded.split(',', 1)[0]!.trim();
    if (first !== '') return first;
  }
  return request.peer === undefined || request.peer === '' ? undefined : request.peer;
}

/**
 * The address part of a peer: grpc-js's `call.getPeer()` (`ipv4:10.0.0.1:5555`,
 * `ipv6:[::1]:5555`, `unix:/path`) or a socket's remoteAddress
 * (`::ffff:10.0.0.1`), without the port, so every connection from one client
 * hashes alike.
 */
export function peerAddress(peer: string): string {
  let text = peer;
  const scheme = /^(ipv4|ipv6|unix|unix-abstract):/.exec(text);
  if (scheme) text = text.slice(scheme[0].length);
  if (scheme?.[1] === 'unix' || scheme?.[1] === 'unix-abstract') return text;
  const bracketed = /^\[([^\]]*)\](?::\d+)?$/.exec(text);
  if (bracketed) text = bracketed[1]!;
  else if (/^[^:]+:\d+$/.test(text)) text = text.slice(0, text.lastIndexOf(':'));
  return text.startsWith('::ffff:') && text.includes('.') ? text.slice(7) : text;
}

/**
 * Chooses an arm. Returns index -1 only when no step applies and no arm has a
 * positive weight, which validation prevents.
 */
export function chooseArm(
  policy: ChoicePolicy,
  arms: readonly WeightedArm[],
  request: RequestView,
  random: () => number,
): ArmChoice {
  if (policy.header !== undefined) {
    const value = request.header(policy.header.name);
    const mapped = value === undefined ? undefined : policy.header.arms.get(value.trim().toLowerCase());
    if (mapped !== undefined) {
      const index = arms.findIndex((arm) => arm.name === mapped);
      if (index >= 0 && !arms[index]!.rolledBack) return { index, reason: 'header' };
      const stable = arms.findIndex((arm) => arm.name === policy.stableArm);
      if (stable >= 0 && !arms[stable]!.rolledBack) return { index: stable, reason: 'header_rolled_back' };
    }
  }
  if (policy.stickyKey !== undefined) {
    const key = request.header(policy.stickyKey);
    if (key !== undefined && key !== '') return { index: rendezvous(arms, key), reason: 'sticky_key' };
  }
  if (policy.stickyFallback === 'address') {
    const address = clientAddress(request);
    if (address !== undefined) return { index: rendezvous(arms, address), reason: 'address' };
  }
  return { index: weightedRandom(arms, random), reason: 'random' };
}

/** A RequestView over a plain header record (HTTP's IncomingHttpHeaders: lower-case names). */
export function requestView(
  headers: Readonly<Record<string, string | readonly string[] | undefined>>,
  peer?: string | (() => string | undefined),
): RequestView {
  return new HeadersView(headers, peer);
}

// A class, not an object literal with a getter: a literal's accessor gives
// every object its own accessor pair and map, which made building a view
// cost microseconds per request (most of which never ask for the peer).
class HeadersView implements RequestView {
  constructor(
    private readonly headers: Readonly<Record<string, string | readonly string[] | undefined>>,
    private readonly peerOf: string | (() => string | undefined) | undefined,
  ) {}

  header(name: string): string | undefined {
    const value = this.headers[name];
    return typeof value === 'string' ? value : value?.[0];
  }

  // A function is called when a route asks for the address (most requests never do).
  get peer(): string | undefined {
    return typeof this.peerOf === 'function' ? this.peerOf() : this.peerOf;
  }
}
