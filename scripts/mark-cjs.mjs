// dist/cjs holds CommonJS inside a "type": "module" package: say so to Node.
import { writeFileSync } from 'node:fs';
writeFileSync(new URL('../dist/cjs/package.json', import.meta.url), '{\n  "type": "commonjs"\n}\n');
