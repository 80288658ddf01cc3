// Writes the contract's TypeScript declarations (sdk/contract/*.d.ts) from
// wit/reconciler.wit with jco's guest type generator: `node sdk/contract.mjs`
// (`make js-types`); `node sdk/contract.mjs --check` fails when the
// committed ones differ (`make test-js`).
//
// jco 1.35's `jco guest-types` command cannot read the WIT: the WASI shim it
// runs on (preview2-shim 0.26) preopens no directory any more. This script
// preopens the repository for it, then calls the same generator.

import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '../../..');
const out = join(here, 'contract');
const transpile = join(here, '../node_modules/@bytecodealliance/jco-transpile');

const shim = await import(join(transpile, 'node_modules/@bytecodealliance/preview2-shim/dist/nodejs/filesystem.js'));
shim._setPreopens({ [repo]: repo });
const { generateGuestTypes } = await import(join(transpile, 'dist/index.js'));

const files = await generateGuestTypes(join(repo, 'wit'), { worldName: 'guest', name: 'contract' });
const generated = Object.entries(files).map(([path, bytes]) => [path, Buffer.from(bytes).toString('utf8')]);

if (process.argv.includes('--check')) {
  const stale = [];
  for (const [name, text] of generated) {
    const committed = await readFile(join(out, name), 'utf8').catch(() => undefined);
    if (committed !== text) stale.push(name);
  }
  if (stale.length > 0) {
    console.error(`sdk/contract is out of date with wit/reconciler.wit (${stale.join(', ')}): run make js-types`);
    process.exit(1);
  }
  console.log(`sdk/contract: ${generated.length} declaration files match wit/reconciler.wit`);
} else {
  await rm(out, { recursive: true, force: true });
  for (const [name, text] of generated) {
    await mkdir(dirname(join(out, name)), { recursive: true });
    await writeFile(join(out, name), text);
  }
  console.log(generated.map(([n]) => `sdk/contract/${n}`).join('\n'));
}
