/** Reading numeric settings from the environment, for the demo and the bench. */

/** `process.env[name]` as a number ≥ `min`, or `fallback` when unset or blank; throws on anything else. */
export function numberFromEnv(name: string, fallback: number, min: number, env: NodeJS.ProcessEnv = process.env): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < min) throw new Error(`${name} must be a number ≥ ${min}, got "${raw}"`);
  return value;
}
