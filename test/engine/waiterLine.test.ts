/**
 * A gate's line (WaiterLine): arrival order, leaving from anywhere, and leaving twice (or from no
 * line) changes nothing — what the `Set` it replaced did.
 */
import { describe, expect, it } from 'vitest';
import { WaiterLine, type InLine } from '../../src/engine/gate/WaiterLine.js';

class W implements InLine<W> {
  ahead: W | undefined = undefined;
  behind: W | undefined = undefined;
  queued = false;
  constructor(readonly name: string) {}
}

const names = (line: WaiterLine<W>) => line.toArray().map((w) => w.name);

describe('WaiterLine', () => {
  it('keeps arrival order; waiters leave from the head, the middle or the tail', () => {
    const line = new WaiterLine<W>();
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((n) => new W(n)) as [W, W, W, W];
    for (const w of [a, b, c, d]) line.add(w);
    expect(names(line)).toEqual(['a', 'b', 'c', 'd']);
    expect(line.head).toBe(a);
    expect(line.delete(b)).toBe(true);
    expect(names(line)).toEqual(['a', 'c', 'd']);
    expect(line.delete(a)).toBe(true);
    expect(line.head).toBe(c);
    expect(line.delete(d)).toBe(true);
    expect(names(line)).toEqual(['c']);
    line.add(a);
    expect(names(line)).toEqual(['c', 'a']);
    expect(line.size).toBe(2);
    line.delete(c);
    line.delete(a);
    expect(line.size).toBe(0);
    expect(line.head).toBeUndefined();
    expect(names(line)).toEqual([]);
  });

  it('leaving twice, or a line one never joined, changes nothing', () => {
    const line = new WaiterLine<W>();
    const a = new W('a');
    const b = new W('b');
    line.add(a);
    line.add(b);
    expect(line.delete(a)).toBe(true);
    expect(line.delete(a)).toBe(false);
    expect(line.delete(new W('stranger'))).toBe(false);
    expect(names(line)).toEqual(['b']);
    expect(line.size).toBe(1);
    expect(b.ahead).toBeUndefined();
  });
});
