/**
 * Redis's glob (the `MATCH` of SCAN, `KEYS`), matched in the client: for names read out of keys
 * whose Redis name holds more than the matched part (a shared lock's key, inside its helper keys'
 * names), where a `MATCH` on the whole name could not tell the parts apart. The rules are Redis's
 * `stringmatchlen`: `*` any run, `?` one character, `[abc]` `[^abc]` `[a-z]` a class, `\x` the
 * character `x` itself.
 */

/** Does `text` match the Redis glob `pattern`? */
export function globMatch(pattern: string, text: string): boolean {
  return matchFrom(pattern, 0, text, 0);
}

function matchFrom(pattern: string, p: number, text: string, t: number): boolean {
  while (p < pattern.length) {
    const c = pattern[p]!;
    if (c === '*') {
      while (pattern[p + 1] === '*') p++;
      if (p + 1 === pattern.length) return true;
      for (let from = t; from <= text.length; from++) if (matchFrom(pattern, p + 1, text, from)) return true;
      return false;
    }
    if (t >= text.length) return false;
    if (c === '?') {
      p++;
      t++;
      continue;
    }
    if (c === '[') {
      const end = classEnd(pattern, p);
      if (!inClass(pattern.slice(p + 1, end), text[t]!)) return false;
      p = end + 1;
      t++;
      continue;
    }
    const literal = c === '\\' && p + 1 < pattern.length ? pattern[++p]! : c;
    if (literal !== text[t]) return false;
    p++;
    t++;
  }
  return t === text.length;
}

/** The index of the `]` closing the class opened at `open` (or the pattern's end, as Redis takes an unclosed one). */
function classEnd(pattern: string, open: number): number {
  let i = open + 1;
  if (pattern[i] === '^') i++;
  for (; i < pattern.length; i++) {
    if (pattern[i] === '\\') i++;
    else if (pattern[i] === ']') return i;
  }
  return pattern.length;
}

/** Is `ch` in the class body `body` (between `[` and `]`)? */
function inClass(body: string, ch: string): boolean {
  const negated = body.startsWith('^');
  let found = false;
  for (let i = negated ? 1 : 0; i < body.length; i++) {
    if (body[i] === '\\' && i + 1 < body.length) {
      if (body[++i] === ch) found = true;
    } else if (body[i + 1] === '-' && i + 2 < body.length) {
      let [low, high] = [body[i]!, body[i + 2]!];
      if (low > high) [low, high] = [high, low];
      if (ch >= low && ch <= high) found = true;
      i += 2;
    } else if (body[i] === ch) found = true;
  }
  return negated ? !found : found;
}
