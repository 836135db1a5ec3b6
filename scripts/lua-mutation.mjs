// Mutation testing of the Redis Lua scripts (npm run mutation:lua). StrykerJS mutates TypeScript
// only, and the scripts are where the store's safety lives, so their mutants are written by hand,
// in lists under mutation/lua/: each one edit of one script (a guard dropped, a comparison
// shifted, a TTL cut), named and described. For each mutant this applies the edit to the .lua
// file, embeds the scripts again (scripts/embed-lua.mjs), runs the list's tests (its `@tests`
// line) on real Redis servers, and puts the file back. A mutant the tests survive is a guard no
// test protects — unless the list marks it `[equivalent: why]`. Exits 1 when an unmarked mutant
// survives, or a marked one is killed (its mark is then wrong).
//
// Usage: node scripts/lua-mutation.mjs [list ...] [--only ID,ID] [-- extra vitest arguments]
// (default: every list in mutation/lua/). The .lua files and the embedded module are restored
// after each mutant and on Ctrl-C; the run refuses to start when git shows them changed.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const luaDir = join(root, 'src', 'backends', 'redis', 'protocol', 'lua');
const listDir = join(root, 'mutation', 'lua');

const args = process.argv.slice(2);
const dash = args.indexOf('--');
const vitestExtra = dash >= 0 ? args.slice(dash + 1) : [];
const own = dash >= 0 ? args.slice(0, dash) : args;
const onlyAt = own.indexOf('--only');
const only = onlyAt >= 0 ? new Set(own[onlyAt + 1].split(',')) : undefined;
const lists = own.filter((a, i) => a !== '--only' && (onlyAt < 0 || i !== onlyAt + 1));
const files =
  lists.length > 0
    ? lists
    : readdirSync(listDir)
        .filter((f) => f.endsWith('.txt'))
        .map((f) => join(listDir, f));

/** A list: its test files and its mutants ({ id, file, description, equivalent, original, replacement }). */
function parse(path) {
  const text = readFileSync(path, 'utf8');
  const [first, ...rest] = text.split('\n');
  if (!first.startsWith('@tests ')) throw new Error(`${path}: the first line must be "@tests <test files>"`);
  const tests = first.slice('@tests '.length).trim().split(/\s+/);
  const mutants = rest
    .join('\n')
    .split('\n===\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const [head, ...body] = block.replace(/^\n+|\n+$/g, '').split('\n');
      const match = /^#\s*(\S+)\s+(\S+)\s*(.*?)(?:\s*\[equivalent: (.*)\])?$/.exec(head);
      if (!match) throw new Error(`${path}: a mutant must start with "# ID file description": ${head}`);
      const [original, replacement] = body.join('\n').split('\n---\n');
      if (replacement === undefined) throw new Error(`${path}: mutant ${match[1]} has no "---" line`);
      return { id: match[1], file: match[2], description: match[3], equivalent: match[4], original, replacement };
    });
  return { tests, mutants };
}

function embed() {
  const run = spawnSync(process.execPath, [join(root, 'scripts', 'embed-lua.mjs')], { stdio: 'inherit' });
  if (run.status !== 0) throw new Error('embedding the scripts failed');
}

const dirty = spawnSync('git', ['status', '--porcelain', '--', luaDir], { cwd: root, encoding: 'utf8' }).stdout.trim();
if (dirty !== '') {
  console.error(`The Lua scripts have uncommitted changes; commit or restore them first:\n${dirty}`);
  process.exit(2);
}

let restore = () => undefined;
process.on('SIGINT', () => {
  restore();
  embed();
  process.exit(130);
});

const surprises = [];
for (const path of files) {
  const { tests, mutants } = parse(path);
  console.log(`${path}: ${mutants.length} mutants; tests: ${tests.join(' ')}`);
  for (const mutant of mutants) {
    if (only !== undefined && !only.has(mutant.id)) continue;
    const script = join(luaDir, mutant.file);
    const source = readFileSync(script, 'utf8');
    const count = source.split(mutant.original).length - 1;
    if (count !== 1) {
      surprises.push(`${mutant.id}: its original text occurs ${count} times in ${mutant.file} (the script changed: update the list)`);
      console.log(`${mutant.id} SKIPPED: original text found ${count} times in ${mutant.file}`);
      continue;
    }
    restore = () => writeFileSync(script, source);
    const started = Date.now();
    let killed;
    try {
      writeFileSync(
        script,
        source.replace(mutant.original, () => mutant.replacement),
      );
      embed();
      const run = spawnSync('npx', ['vitest', 'run', '--bail', '1', ...tests, ...vitestExtra], { cwd: root, encoding: 'utf8' });
      killed = run.status !== 0;
    } finally {
      restore();
      restore = () => undefined;
      embed();
    }
    const seconds = Math.round((Date.now() - started) / 1000);
    const verdict = killed ? 'KILLED' : mutant.equivalent !== undefined ? 'SURVIVED (equivalent)' : 'SURVIVED';
    console.log(`${mutant.id} ${verdict} (${seconds} s) ${mutant.file}: ${mutant.description}`);
    if (!killed && mutant.equivalent === undefined) surprises.push(`${mutant.id} survived: ${mutant.file}: ${mutant.description}`);
    if (killed && mutant.equivalent !== undefined) surprises.push(`${mutant.id} is marked equivalent but was killed: check its mark`);
  }
}
if (surprises.length > 0) {
  console.log(`\n${surprises.length} to look at:\n- ${surprises.join('\n- ')}`);
  process.exit(1);
}
console.log('\nEvery mutant killed, or marked equivalent and surviving.');
