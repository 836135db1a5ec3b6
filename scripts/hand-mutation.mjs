// Applies hand-written mutants of one TypeScript source file, one at a time, and runs tests
// against each: for the parts StrykerJS is too slow for here (the Redis store's modules, whose
// tests start real servers). The lists are in mutation/hand/ (see its README.md for which source
// file and tests each list goes with).
//
// Usage: node scripts/hand-mutation.mjs <source file> <list> -- <vitest arguments: test files …>
//
// A list holds blocks "ORIGINAL\n---\nREPLACEMENT" separated by "\n===\n"; ORIGINAL must occur
// exactly once in the source file (a block that does not is reported and skipped). For each block
// the source file is rewritten, `npx vitest run --bail=1 <vitest arguments>` runs, and the file is
// put back (also on Ctrl-C). A mutant is KILLED when the run fails, SURVIVED when it passes. The
// run refuses to start when git shows the source file changed. Exits 0: a survivor may be
// equivalent (the lists do not mark them; mutation/hand/README.md says which are).
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';

const args = process.argv.slice(2);
const dash = args.indexOf('--');
if (dash !== 2) {
  console.error('usage: node scripts/hand-mutation.mjs <source file> <list> -- <test files …>');
  process.exit(2);
}
const [source, list] = args;
const vitestArgs = args.slice(dash + 1);

const changed = spawnSync('git', ['status', '--porcelain', '--', source], { encoding: 'utf8' });
if (changed.stdout.trim() !== '') {
  console.error(`${source} has uncommitted changes: commit or stash them first`);
  process.exit(2);
}

const original = readFileSync(source, 'utf8');
const restore = () => writeFileSync(source, original);
process.on('SIGINT', () => {
  restore();
  process.exit(130);
});

const blocks = readFileSync(list, 'utf8')
  .split('\n===\n')
  .filter((block) => block.trim() !== '');
const counts = { killed: 0, survived: 0, skipped: 0 };
try {
  for (const [i, block] of blocks.entries()) {
    const [before, after] = block.split('\n---\n').map((part) => part.replace(/^\n+|\n+$/g, ''));
    const label = `#${i + 1} ${JSON.stringify(before.trim().slice(0, 70))}`;
    if (after === undefined || original.split(before).length !== 2) {
      console.log(`${label}: SKIPPED (no "---" line, or the original is not found exactly once)`);
      counts.skipped++;
      continue;
    }
    writeFileSync(
      source,
      original.replace(before, () => after),
    );
    const run = spawnSync('npx', ['vitest', 'run', '--bail=1', ...vitestArgs], { stdio: 'ignore' });
    restore();
    const verdict = run.status === 0 ? 'SURVIVED' : 'KILLED';
    counts[verdict === 'KILLED' ? 'killed' : 'survived']++;
    console.log(`${label}: ${verdict}`);
  }
} finally {
  restore();
}
console.log(`${blocks.length} mutants: ${counts.killed} killed, ${counts.survived} survived, ${counts.skipped} skipped`);
