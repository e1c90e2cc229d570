// view.mjs — `nlembed view`'s pages measured in headless chromium (Debian's,
// software WebGL: SwiftShader), driven by playwright-core from
// viewer/node_modules. For each page, REPS fresh loads:
//   first frame   navigation start -> the frame that first drew the points
//                 (its `drawing` event; the page draws it while its script
//                 runs), as the page reports it (firstFrameMs)
//   and its parts: HTML parsed until the script starts, base64 decoding and
//   normalisation, creating the WebGL plot (context, shaders), draw() until
//   its promise (state texture, spatial index).
// Then, on the last load: frames per second during a 2-second zoom, the
// time from a mouse move onto a point to its tooltip, and from the end of a
// shift+drag lasso to the selection; the JS heap.
//
//   node bench/view.mjs PAGE.html [REPS] [SCREENSHOT.png]
//
// SCREENSHOT: the page with a lasso selection and a tooltip, written as an
// 8-bit indexed PNG (at most 256 colours) to stay small.
import { createRequire } from 'node:module';
import { writeFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { deflateSync } from 'node:zlib';

const require = createRequire(new URL('../viewer/package.json', import.meta.url));
const { chromium } = require('playwright-core');

const [file, repsArg, shot] = process.argv.slice(2);
const reps = Number(repsArg || 3);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--use-angle=swiftshader', '--enable-unsafe-swiftshader', '--ignore-gpu-blocklist', '--no-sandbox',
    '--js-flags=--max-old-space-size=8192'],
});
const median = (a) => { const s = [...a].sort((x, y) => x - y); return s[Math.floor((s.length - 1) / 2)]; };

const runs = [];
let page;
for (let r = 0; r < reps; r++) {
  if (page) await page.context().close();
  const context = await browser.newContext({ viewport: { width: 1200, height: 800 } });
  page = await context.newPage();
  await page.goto('file://' + resolve(file), { timeout: 300000 });
  await page.waitForFunction(() => window.nlembedView && (window.nlembedView.firstFrameMs || window.nlembedView.error),
    null, { timeout: 300000, polling: 50 });
  await page.waitForFunction(() => window.nlembedView.timings.drawMs !== undefined, null, { timeout: 300000 });
  const t = await page.evaluate(() => {
    const v = window.nlembedView;
    if (v.error) return { error: v.error };
    return { first: v.firstFrameMs, parse: v.timings.scriptStartMs, decode: v.timings.decodeMs,
      create: v.timings.createdMs - v.timings.scriptStartMs - v.timings.decodeMs, draw: v.timings.drawMs, n: v.n };
  });
  if (t.error) throw new Error(t.error);
  runs.push(t);
}
const n = runs[0].n;
const fmt = (k) => `${(median(runs.map((r) => r[k])) / 1000).toFixed(2)} s`;
console.log(`${file}: ${n.toLocaleString('en-US')} points, ${(statSync(file).size / 1e6).toFixed(1)} MB`);
console.log(`  first frame ${fmt('first')} (median of ${reps}: ${runs.map((r) => (r.first / 1000).toFixed(2)).join(', ')} s)` +
  ` = HTML parsed ${fmt('parse')} + decode ${fmt('decode')} + WebGL plot created ${fmt('create')}` +
  ` + draw() ${fmt('draw')} (+ the frame)`);

// Frames during a 2-second zoom transition.
const fps = await page.evaluate(() => new Promise((done) => {
  const sp = window.nlembedView.scatterplot;
  let frames = 0;
  const t0 = performance.now();
  const sub = sp.subscribe('draw', () => frames++);
  sp.zoomToLocation([0, 0], 0.4, { transition: true, transitionDuration: 2000 }).then(() => {
    const t = performance.now() - t0;
    sp.unsubscribe(sub);
    sp.zoomToOrigin();
    setTimeout(() => done({ frames, seconds: t / 1000 }), 500);
  });
}));
console.log(`  zoom: ${fps.frames} frames in ${fps.seconds.toFixed(2)} s = ${(fps.frames / fps.seconds).toFixed(1)} frames/s`);

// Hover: the mouse onto a point, until its tooltip shows (wall time here).
const k = Math.floor(n / 2);
const [hx, hy] = await page.evaluate((i) => window.nlembedView.screenPosition(i), k);
await page.mouse.move(hx + 40, hy + 40);
await page.waitForTimeout(300);
let t0 = Date.now();
await page.mouse.move(hx, hy);
await page.waitForFunction(() => document.getElementById('nle-tooltip').style.display === 'block', null, { timeout: 30000, polling: 'raf' });
const hoverMs = Date.now() - t0;
const tipIndex = await page.evaluate(() => document.getElementById('nle-tooltip').dataset.index);
console.log(`  hover: tooltip in ${hoverMs} ms (point ${tipIndex})`);

// Lasso over the upper-left quarter of the plot.
const box = await page.evaluate(() => {
  const r = document.getElementById('nle-plot').getBoundingClientRect();
  return [r.left, r.top, r.width, r.height];
});
const [L, T, W, H] = box;
const poly = [[L + 0.3 * W, T + 0.2 * H], [L + 0.5 * W, T + 0.15 * H], [L + 0.52 * W, T + 0.5 * H], [L + 0.3 * W, T + 0.55 * H]];
await page.mouse.move(poly[0][0], poly[0][1]);
await page.keyboard.down('Shift');
await page.mouse.down();
// Chrome delivers mouse moves once a frame: at a few frames a second
// (software WebGL) the path waits for two frames at each step.
const frames = () => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
let prev = poly[0];
for (const [x, y] of [...poly.slice(1), poly[0]]) {
  for (let s = 1; s <= 5; s++) {
    await page.mouse.move(prev[0] + ((x - prev[0]) * s) / 5, prev[1] + ((y - prev[1]) * s) / 5);
    await frames();
  }
  prev = [x, y];
}
t0 = Date.now();
await page.mouse.up();
await page.keyboard.up('Shift');
// A small map (the smoke run's 300 points) may hold no point inside the
// lasso: after a few seconds that is the answer, not an error.
const lassoWait = process.env.SMOKE === '1' ? 5000 : 60000;
await page.waitForFunction(() => window.nlembedView.selection().length > 0, null, { timeout: lassoWait, polling: 20 })
  .catch((e) => { if (process.env.SMOKE !== '1') throw e; });
const lassoMs = Date.now() - t0;
const selected = await page.evaluate(() => window.nlembedView.selection().length);
const heap = await page.evaluate(() => (performance.memory ? performance.memory.usedJSHeapSize : 0));
console.log(`  lasso: ${selected.toLocaleString('en-US')} points selected in ${lassoMs} ms; JS heap ${(heap / 1e6).toFixed(0)} MB`);

if (shot) {
  // A tooltip for the picture: the point nearest the middle of the lasso.
  const [cx, cy] = [L + 0.7 * W, T + 0.75 * H];
  const near = await page.evaluate(([x, y]) => {
    const v = window.nlembedView;
    let best = 0, bd = Infinity;
    for (let i = 0; i < v.n; i += 7) {
      const [px, py] = v.screenPosition(i);
      const d = Math.hypot(px - x, py - y);
      if (d < bd) { bd = d; best = i; }
    }
    return v.screenPosition(best);
  }, [cx, cy]);
  await page.mouse.move(near[0] + 20, near[1] + 20);
  await page.mouse.move(near[0], near[1], { steps: 3 });
  await page.waitForFunction(() => document.getElementById('nle-tooltip').style.display === 'block', null, { timeout: 30000 });
  await page.waitForTimeout(300);
  const png = await page.screenshot();
  writeFileSync(shot, await indexedPng(page, png));
  console.log(`  screenshot: ${shot} (${(statSync(shot).size / 1e3).toFixed(0)} KB)`);
}
await browser.close();

// The screenshot as an indexed PNG: its pixels (decoded by the browser) cut
// to the 256 most frequent colours at 4 bits a channel, each pixel mapped to
// the nearest of them.
async function indexedPng(page, png) {
  const q = await page.evaluate(async (b64) => {
    const img = new Image();
    img.src = 'data:image/png;base64,' + b64;
    await img.decode();
    const c = document.createElement('canvas');
    c.width = img.width; c.height = img.height;
    const ctx = c.getContext('2d');
    ctx.drawImage(img, 0, 0);
    const d = ctx.getImageData(0, 0, c.width, c.height).data;
    const key = (i) => ((d[i] >> 4) << 8) | ((d[i + 1] >> 4) << 4) | (d[i + 2] >> 4);
    const count = new Uint32Array(4096);
    for (let i = 0; i < d.length; i += 4) count[key(i)]++;
    const top = [...count.keys()].filter((k) => count[k]).sort((a, b) => count[b] - count[a]).slice(0, 256);
    const pal = top.map((k) => [((k >> 8) & 15) * 17, ((k >> 4) & 15) * 17, (k & 15) * 17]);
    const map = new Uint8Array(4096);
    for (let k = 0; k < 4096; k++) {
      if (!count[k]) continue;
      const r = ((k >> 8) & 15) * 17, g = ((k >> 4) & 15) * 17, b = (k & 15) * 17;
      let best = 0, bd = Infinity;
      pal.forEach(([pr, pg, pb], j) => {
        const e = (pr - r) ** 2 + (pg - g) ** 2 + (pb - b) ** 2;
        if (e < bd) { bd = e; best = j; }
      });
      map[k] = best;
    }
    const idx = new Uint8Array(c.width * c.height);
    for (let p = 0; p < idx.length; p++) idx[p] = map[key(4 * p)];
    let s = '';
    for (let p = 0; p < idx.length; p += 8192) s += String.fromCharCode.apply(null, idx.subarray(p, p + 8192));
    return { w: c.width, h: c.height, pal, idx: btoa(s) };
  }, png.toString('base64'));
  const idx = Buffer.from(q.idx, 'base64');
  const raw = Buffer.alloc(q.h * (q.w + 1));
  for (let y = 0; y < q.h; y++) idx.copy(raw, y * (q.w + 1) + 1, y * q.w, (y + 1) * q.w); // filter 0
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (buf) => {
    let c = 0xffffffff;
    for (const b of buf) c = crcTable[(c ^ b) & 255] ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type, data) => {
    const len = Buffer.alloc(4); len.writeUInt32BE(data.length);
    const td = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const c = Buffer.alloc(4); c.writeUInt32BE(crc(td));
    return Buffer.concat([len, td, c]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(q.w, 0); ihdr.writeUInt32BE(q.h, 4);
  ihdr[8] = 8; ihdr[9] = 3; // 8-bit indices into a palette
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr),
    chunk('PLTE', Buffer.from(q.pal.flat())), chunk('IDAT', deflateSync(raw, { level: 9 })), chunk('IEND', Buffer.alloc(0))]);
}
