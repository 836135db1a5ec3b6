// Builds the package: the Lua module, then ESM (dist/esm) and CommonJS (dist/cjs) with types.
// `node scripts/build.mjs [outDir]` builds elsewhere (the packaging test builds into a temp dir
// so it never races a build of the working tree); it then only checks that the generated Lua
// module is current instead of rewriting a source file.
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const elsewhere = process.argv[2] !== undefined;
const out = resolve(process.argv[2] ?? join(root, 'dist'));
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');

execFileSync(process.execPath, [join(root, 'scripts', 'embed-lua.mjs'), ...(elsewhere ? ['--check'] : [])], { stdio: 'inherit' });
rmSync(out, { recursive: true, force: true });
for (const [config, sub] of [
  ['tsconfig.esm.json', 'esm'],
  ['tsconfig.cjs.json', 'cjs'],
]) {
  execFileSync(process.execPath, [tsc, '-p', join(root, config), '--outDir', join(out, sub)], { stdio: 'inherit', cwd: root });
}
// dist/cjs holds CommonJS inside a "type": "module" package: say so to Node.
mkdirSync(join(out, 'cjs'), { recursive: true });
writeFileSync(join(out, 'cjs', 'package.json'), '{\n  "type": "commonjs"\n}\n');
