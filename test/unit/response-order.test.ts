import { describe, expect, it } from 'vitest';
import { ResponseOrder } from '../../src/batching/response-order.js';

describe('ResponseOrder (preserve_ordering)', () => {
  it('releases answers in sequence order, whatever order they became ready in', async () => {
    const order = new ResponseOrder();
    const released: number[] = [];
    const answer = (sequence: number) => order.turn(sequence).then(() => released.push(sequence));
    const pending = [answer(2), answer(3), answer(1)];
    await Promise.resolve();
    expect(released).toEqual([]);
    expect(order.waiting).toBe(3);
    pending.push(answer(0));
    await Promise.all(pending);
    expect(released).toEqual([0, 1, 2, 3]);
    expect(order.waiting).toBe(0);
  });

  it('lets a ready answer go at once when every earlier one went', async () => {
    const order = new ResponseOrder();
    await order.turn(0);
    await order.turn(1);
    let third = false;
    const waiting = order.turn(3).then(() => (third = true));
    await Promise.resolve();
    expect(third).toBe(false);
    await order.turn(2);
    await waiting;
    expect(third).toBe(true);
  });
});
