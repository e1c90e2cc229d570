// build.mjs — bundles the viewer (src/, regl-scatterplot and its
// dependencies, the CSS as a string) into one minified script,
// dist/nlembed-view.js, which the Makefile turns into a C array inside the
// nlembed tool (`nlembed view` writes it into each page).
import { build } from 'esbuild';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, 'dist', 'nlembed-view.js');

const result = await build({
  entryPoints: [join(here, 'src', 'main.js')],
  bundle: true,
  minify: true,
  format: 'iife',
  target: ['es2020'],
  loader: { '.css': 'text' },
  legalComments: 'none',
  charset: 'ascii', // no raw non-ASCII in the page, whatever its encoding
  write: false,
});
let js = result.outputFiles[0].text;

// The script goes inline in an HTML page: "</script" would end it early and
// "<!--" would change how the HTML parser reads it. esbuild escapes the first
// in strings; refuse a bundle where either remains.
for (const bad of ['</script', '<!--']) {
  if (js.toLowerCase().includes(bad)) {
    console.error(`viewer/build.mjs: the bundle contains "${bad}"; it cannot be inlined in a page`);
    process.exit(1);
  }
}
// Written only when it changed, so that make relinks the tool only then.
if (!existsSync(out) || readFileSync(out, 'utf8') !== js) {
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, js);
}
console.log(`viewer: ${out} (${js.length} bytes)`);
