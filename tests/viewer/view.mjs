// view.mjs — `nlembed view`'s page in a real browser: Debian's chromium,
// headless, WebGL in software (SwiftShader), driven by playwright-core
// (viewer/'s devDependency; it downloads no browser). The mouse does what a
// user would: hover, shift+drag a lasso, wheel, drag; the keyboard types an
// index. Each check prints "ok NAME" or "FAIL NAME: why" (tests/viewer.sh
// counts them).
//
//   node tests/viewer/view.mjs FIXTURES
//
// FIXTURES (written by tests/viewer.sh): page.html (embedding, labels, grey
// images), names.html (class names, RGB images), expect.json (the labels,
// the names and the images' bytes as the test made them), grid.html (a
// square grid of 31 x 31 points), outliers.html (page.html's embedding and
// labels with 3 points far away appended).
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { readPng, squareMapProblems } from './png.mjs';

const require = createRequire(new URL('../../viewer/package.json', import.meta.url));
const { chromium } = require('playwright-core');

const dir = process.argv[2];
const expect = JSON.parse(readFileSync(join(dir, 'expect.json'), 'utf8'));
let failures = 0;
const ok = (name) => console.log(`ok ${name}`);
const bad = (name, why) => {
  failures++;
  console.log(`FAIL ${name}: ${String(why).replace(/\s+/g, ' ').slice(0, 400)}`);
};
const check = (name, cond, why) => (cond ? ok(name) : bad(name, why));
async function step(name, fn) {
  try {
    await fn();
  } catch (err) {
    bad(name, err && err.stack ? err.stack.split('\n').slice(0, 3).join(' ') : err);
  }
}

// Point in polygon by the even-odd rule (a ray to +x counts crossings),
// written here independently of the library's non-zero winding test; the two
// agree on the simple polygons used below.
function inside(poly, x, y) {
  let c = false;
  for (let i = 0, j = poly.length - 1; i < poly.length; j = i++) {
    const [xi, yi] = poly[i], [xj, yj] = poly[j];
    if (yi > y !== yj > y && x < ((xj - xi) * (y - yi)) / (yj - yi) + xi) c = !c;
  }
  return c;
}
function distToSegment([px, py], [ax, ay], [bx, by]) {
  const dx = bx - ax, dy = by - ay;
  const t = Math.max(0, Math.min(1, ((px - ax) * dx + (py - ay) * dy) / (dx * dx + dy * dy || 1)));
  return Math.hypot(px - ax - t * dx, py - ay - t * dy);
}
const nearEdge = (poly, p, tol) => poly.some((a, i) => distToSegment(p, a, poly[(i + 1) % poly.length]) < tol);

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--use-angle=swiftshader', '--enable-unsafe-swiftshader', '--ignore-gpu-blocklist', '--no-sandbox'],
});
const context = await browser.newContext({ viewport: { width: 1000, height: 720 }, acceptDownloads: true });
await context.grantPermissions(['clipboard-read', 'clipboard-write']);

async function open(file, ctx = context) {
  const page = await ctx.newPage();
  const errors = [], requests = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  page.on('request', (r) => {
    const u = r.url();
    if (!/^(file|data|blob):/.test(u)) requests.push(u);
  });
  await page.goto('file://' + join(dir, file));
  await page.waitForFunction(() => window.nlembedView && (window.nlembedView.firstFrameMs || window.nlembedView.error),
    null, { timeout: 60000 });
  return { page, errors, requests };
}

// All points' screen positions (page CSS pixels), through the page's hook
// over regl-scatterplot's camera (getScreenPosition).
const positions = (page) => page.evaluate(() => {
  const v = window.nlembedView;
  return Array.from({ length: v.n }, (_, i) => v.screenPosition(i));
});

// Waits until the page's selection changes from `before` (JSON).
async function selectionAfter(page, before) {
  await page.waitForFunction((b) => JSON.stringify(window.nlembedView.selection()) !== b, before, { timeout: 10000 });
  return page.evaluate(() => window.nlembedView.selection());
}

// Drags the mouse around a polygon as a user draws a lasso: along each edge
// in small steps, pausing at the corners (regl-scatterplot samples the path
// at most every lassoMinDelay ms), back to the start.
async function drawLasso(page, poly, withShift) {
  await page.mouse.move(poly[0][0], poly[0][1]);
  if (withShift) await page.keyboard.down('Shift');
  await page.mouse.down();
  for (const [x, y] of [...poly.slice(1), poly[0]]) {
    await page.mouse.move(x, y, { steps: 12 });
    await page.waitForTimeout(40);
  }
  await page.mouse.up();
  if (withShift) await page.keyboard.up('Shift');
}

// The point nearest (x, y) among those well inside the plot.
function startOnPoint(pts, x, y) {
  let best = null, bd = Infinity;
  for (const p of pts) {
    const d = Math.hypot(p[0] - x, p[1] - y);
    if (d < bd) { bd = d; best = p; }
  }
  return [best[0], best[1]];
}

function compareSelection(name, got, pts, poly) {
  const want = [];
  for (let i = 0; i < pts.length; i++) if (inside(poly, pts[i][0], pts[i][1])) want.push(i);
  const g = new Set(got), w = new Set(want);
  // Points within a pixel and a half of an edge may fall either way (the
  // library's polygon is the sampled mouse path); every other point must agree.
  const wrong = [...new Set([...got, ...want])].filter((i) => g.has(i) !== w.has(i) && !nearEdge(poly, pts[i], 1.5));
  check(name, want.length >= 5 && wrong.length === 0,
    `${got.length} selected, ${want.length} inside the polygon, disagreeing away from its edges: ${wrong.slice(0, 10)}`);
  return want;
}

// ---------------------------------------------------------------- page.html
{
  const { page, errors, requests } = await open('page.html');
  const n = expect.labels.length;
  await step('page_loads', async () => {
    const info = await page.evaluate(() => ({ n: window.nlembedView.n, ff: window.nlembedView.firstFrameMs,
      error: window.nlembedView.error || null }));
    check('page_loads', !info.error && info.n === n && info.ff > 0, JSON.stringify(info) + ' ' + errors.join('; '));
  });
  check('page_no_network', requests.length === 0, requests.slice(0, 5).join(' '));

  await step('screenshot_not_blank', async () => {
    const png = await page.screenshot({ path: join(dir, 'shot.png') });
    // Count colours in the plot: decode the screenshot through a canvas.
    const stats = await page.evaluate(async (b64) => {
      const img = new Image();
      img.src = 'data:image/png;base64,' + b64;
      await img.decode();
      const c = document.createElement('canvas');
      c.width = img.width; c.height = img.height;
      const ctx = c.getContext('2d');
      ctx.drawImage(img, 0, 0);
      const plot = document.getElementById('nle-plot').getBoundingClientRect();
      const d = ctx.getImageData(plot.left, plot.top, plot.width, plot.height).data;
      const colours = new Set();
      let ink = 0;
      for (let i = 0; i < d.length; i += 4) {
        colours.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]);
        if (d[i] < 235 || d[i + 1] < 235 || d[i + 2] < 235) ink++;
      }
      return { colours: colours.size, ink, pixels: d.length / 4 };
    }, png.toString('base64'));
    check('screenshot_not_blank', stats.colours >= 6 && stats.ink > 500, JSON.stringify(stats));
  });

  // Hover: the most isolated points (no other within 6 px on screen), so the
  // point under the cursor is unambiguous.
  await step('hover_tooltip', async () => {
    const pts = await positions(page);
    const iso = pts.map((p, i) => {
      let d = Infinity;
      for (let j = 0; j < pts.length; j++) if (j !== i) d = Math.min(d, Math.hypot(p[0] - pts[j][0], p[1] - pts[j][1]));
      return [d, i];
    }).sort((a, b) => b[0] - a[0]).filter(([d]) => d > 6).slice(0, 4).map(([, i]) => i);
    if (iso.length < 2) throw new Error('fewer than 2 isolated points to hover');
    const problems = [];
    for (const i of iso) {
      await page.mouse.move(pts[i][0] + 30, pts[i][1] + 30);
      await page.mouse.move(pts[i][0], pts[i][1], { steps: 4 });
      await page.waitForFunction((k) => document.getElementById('nle-tooltip').dataset.index === String(k), i,
        { timeout: 5000 }).catch(() => {});
      const tip = await page.evaluate(() => {
        const t = document.getElementById('nle-tooltip');
        const c = t.querySelector('canvas');
        return { shown: t.style.display !== 'none', index: t.dataset.index, label: t.dataset.label,
          text: t.textContent,
          pixels: c ? Array.from(c.getContext('2d').getImageData(0, 0, c.width, c.height).data) : null };
      });
      const wantLabel = String(expect.labels[i]);
      const grey = tip.pixels ? tip.pixels.filter((_, k) => k % 4 === 0) : [];
      if (!tip.shown || tip.index !== String(i)) problems.push(`point ${i}: tooltip ${JSON.stringify([tip.shown, tip.index])}`);
      else if (tip.label !== wantLabel || !tip.text.includes(`#${i}`)) problems.push(`point ${i}: label ${tip.label}, want ${wantLabel}`);
      else if (JSON.stringify(grey) !== JSON.stringify(expect.images[i])) problems.push(`point ${i}: image differs`);
    }
    check('hover_tooltip', problems.length === 0, problems.join('; '));
  });

  let selected = [];
  await step('lasso_shift_drag', async () => {
    await page.mouse.move(5, 5);
    const pts = await positions(page);
    const box = await page.evaluate(() => {
      const r = document.getElementById('nle-plot').getBoundingClientRect();
      return [r.left, r.top, r.width, r.height];
    });
    // A pentagon over the middle of the map (the box of the points on
    // screen), covering part of the 5 clusters.
    const L = Math.min(...pts.map((p) => p[0])), T = Math.min(...pts.map((p) => p[1]));
    const W = Math.max(...pts.map((p) => p[0])) - L, H = Math.max(...pts.map((p) => p[1])) - T;
    const poly = [[L + 0.03 * W, T + 0.2 * H], [L + 0.58 * W, T + 0.09 * H], [L + 0.9 * W, T + 0.5 * H],
      [L + 0.5 * W, T + 0.91 * H], [L + 0.08 * W, T + 0.73 * H]];
    // Start (and so end) the lasso on a point: the mouse-up that closes it
    // there must not count as a click on that point.
    poly[0] = startOnPoint(pts, L + 0.34 * W, T + 0.5 * H);
    if (!box) throw new Error('no plot');
    const before = JSON.stringify(await page.evaluate(() => window.nlembedView.selection()));
    await drawLasso(page, poly, true);
    selected = await selectionAfter(page, before);
    compareSelection('lasso_shift_drag', selected, pts, poly);
  });

  await step('lasso_download', async () => {
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#nle-download')]);
    const text = readFileSync(await download.path(), 'utf8');
    check('lasso_download', download.suggestedFilename() === 'selection.json' &&
      JSON.stringify(JSON.parse(text)) === JSON.stringify(selected) && selected.length > 0,
      `${download.suggestedFilename()}: ${text.slice(0, 100)} vs ${selected.length} selected`);
  });

  await step('lasso_copy', async () => {
    await page.click('#nle-copy');
    const text = await page.evaluate(() => navigator.clipboard.readText());
    check('lasso_copy', JSON.stringify(JSON.parse(text)) === JSON.stringify(selected), text.slice(0, 100));
  });

  await step('lasso_mode_button', async () => {
    await page.click('#nle-mode-lasso');
    const pts = await positions(page);
    const box = await page.evaluate(() => {
      const r = document.getElementById('nle-plot').getBoundingClientRect();
      return [r.left, r.top, r.width, r.height];
    });
    const [L, T, W, H] = box;
    const poly = [[L + 0.05 * W, T + 0.05 * H], [L + 0.6 * W, T + 0.05 * H], [L + 0.6 * W, T + 0.6 * H], [L + 0.05 * W, T + 0.6 * H]];
    poly.unshift(startOnPoint(pts, L + 0.3 * W, T + 0.3 * H));
    const before = JSON.stringify(await page.evaluate(() => window.nlembedView.selection()));
    await drawLasso(page, poly, false);
    const got = await selectionAfter(page, before);
    compareSelection('lasso_mode_button', got, pts, poly);
    const count = await page.textContent('#nle-selected');
    check('lasso_count_shown', count.startsWith(`${got.length.toLocaleString('en-US')} selected`), count);
    await page.click('#nle-mode-pan');
  });

  await step('search_index', async () => {
    const k = Math.floor(n / 3);
    await page.fill('#nle-search', String(k));
    await page.press('#nle-search', 'Enter');
    await page.waitForFunction((i) => document.getElementById('nle-tooltip').dataset.index === String(i), k, { timeout: 5000 });
    await page.waitForTimeout(500); // the camera's 300 ms transition
    const r = await page.evaluate((i) => {
      const c = document.getElementById('nle-plot').getBoundingClientRect();
      return { p: window.nlembedView.screenPosition(i), centre: [c.left + c.width / 2, c.top + c.height / 2],
        label: document.getElementById('nle-tooltip').dataset.label };
    }, k);
    const off = Math.hypot(r.p[0] - r.centre[0], r.p[1] - r.centre[1]);
    check('search_index', off < 2 && r.label === String(expect.labels[k]), `point ${k} at ${r.p}, centre ${r.centre}, label ${r.label}`);
    await page.fill('#nle-search', String(n));
    await page.press('#nle-search', 'Enter');
    const msg = await page.textContent('#nle-search-msg');
    check('search_out_of_range', msg.includes(`no point "${n}"`), msg);
  });

  await step('zoom_and_pan', async () => {
    const a = 0, b = n - 1;
    const p0 = await page.evaluate(([i, j]) => [window.nlembedView.screenPosition(i), window.nlembedView.screenPosition(j)], [a, b]);
    const box = await page.evaluate(() => {
      const r = document.getElementById('nle-plot').getBoundingClientRect();
      return [r.left + r.width / 2, r.top + r.height / 2];
    });
    await page.mouse.move(box[0], box[1]);
    await page.mouse.wheel(0, -300);
    await page.waitForTimeout(400);
    const p1 = await page.evaluate(([i, j]) => [window.nlembedView.screenPosition(i), window.nlembedView.screenPosition(j)], [a, b]);
    const d0 = Math.hypot(p0[0][0] - p0[1][0], p0[0][1] - p0[1][1]);
    const d1 = Math.hypot(p1[0][0] - p1[1][0], p1[0][1] - p1[1][1]);
    check('wheel_zooms', d1 > 1.2 * d0, `distance ${d0.toFixed(1)} -> ${d1.toFixed(1)} px`);
    await page.mouse.move(box[0] + 3, box[1] + 3);
    await page.mouse.down();
    await page.mouse.move(box[0] + 83, box[1] + 43, { steps: 10 });
    await page.mouse.up();
    await page.waitForTimeout(300);
    const p2 = await page.evaluate((i) => window.nlembedView.screenPosition(i), a);
    const dx = p2[0] - p1[0][0], dy = p2[1] - p1[0][1];
    check('drag_pans', Math.abs(dx - 80) < 3 && Math.abs(dy - 40) < 3, `moved by ${dx.toFixed(1)}, ${dy.toFixed(1)}`);
  });
  check('page_no_errors', errors.length === 0, errors.join('; '));
  await page.close();
}

// --------------------------------------------------------------- names.html
{
  const { page, errors } = await open('names.html');
  await step('legend_names', async () => {
    const entries = await page.$$eval('#nle-legend .nle-entry', (els) => els.map((e) => e.children[1].textContent));
    check('legend_names', JSON.stringify(entries) === JSON.stringify(expect.names), `${entries} vs ${expect.names}`);
  });
  await step('hover_rgb_image', async () => {
    const i = 7;
    await page.evaluate((k) => window.nlembedView.search(String(k)), i);
    const tip = await page.evaluate(() => {
      const t = document.getElementById('nle-tooltip');
      const c = t.querySelector('canvas');
      return { label: t.dataset.label, pixels: Array.from(c.getContext('2d').getImageData(0, 0, c.width, c.height).data) };
    });
    const rgb = tip.pixels.filter((_, k) => k % 4 !== 3);
    check('hover_rgb_image', tip.label === expect.names[expect.name_labels[i]] &&
      JSON.stringify(rgb) === JSON.stringify(expect.rgb[i]), `label ${tip.label}`);
  });
  await step('legend_click_selects_class', async () => {
    await page.click('#nle-legend .nle-entry[data-class="1"]');
    const got = await selectionAfter(page, '[]');
    const want = expect.name_labels.map((c, i) => (c === 1 ? i : -1)).filter((i) => i >= 0);
    check('legend_click_selects_class', JSON.stringify(got) === JSON.stringify(want), `${got.length} vs ${want.length}`);
  });
  check('names_no_errors', errors.length === 0, errors.join('; '));
  await page.close();
}

// --------------------------------------------------------------- wide.html
{
  const { page, errors } = await open('wide.html');
  await step('wide_labels', async () => {
    const k = 37; // label 259: past what one byte holds
    await page.evaluate((i) => window.nlembedView.search(String(i)), k);
    const r = await page.evaluate(() => ({
      label: document.getElementById('nle-tooltip').dataset.label,
      entries: document.querySelectorAll('#nle-legend .nle-entry').length,
      more: document.getElementById('nle-legend').lastChild.textContent,
    }));
    check('wide_labels', r.label === String(expect.wide_labels[k]) && r.entries === 60 && r.more.includes('240 more'),
      JSON.stringify(r));
  });
  check('wide_no_errors', errors.length === 0, errors.join('; '));
  await page.close();
}

// --------------------------------------------------------------- grid.html
// The plot takes its size from the layout: a square grid must fill 95% of
// the plot's shorter side, centred, in the first frame and after resizes.
const plotBox = (page) => page.evaluate(() => {
  const r = document.getElementById('nle-plot').getBoundingClientRect();
  return [r.left, r.top, r.width, r.height];
});
async function gridProblems(page) {
  const img = readPng(await page.screenshot());
  return squareMapProblems(img, await plotBox(page), 4, 4);
}
{
  // With animation frames and resize observations that never come, the
  // first frame must still be drawn by the time the page has loaded (a
  // screenshot taken then, as `chromium --screenshot` does, showed the
  // legend and no points).
  const still = await browser.newContext({ viewport: { width: 900, height: 700 } });
  await still.addInitScript(() => {
    window.requestAnimationFrame = () => 0;
    window.ResizeObserver = class { observe() {} unobserve() {} disconnect() {} };
  });
  const page = await still.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await step('first_frame_at_load', async () => {
    await page.goto('file://' + join(dir, 'grid.html'), { waitUntil: 'load' });
    const ff = await page.evaluate(() => window.nlembedView.firstFrameMs);
    const why = await gridProblems(page);
    check('first_frame_at_load', ff > 0 && !why && errors.length === 0, `first frame ${ff}; ${why}; ${errors.join('; ')}`);
  });
  await still.close();
}
{
  const { page, errors } = await open('grid.html');
  const sizes = async () => page.evaluate(() => {
    const s = window.nlembedView.scatterplot, r = document.getElementById('nle-plot').getBoundingClientRect();
    const c = document.querySelector('#nle-plot canvas'), rc = s.get('renderer').canvas, d = devicePixelRatio;
    return { plot: [Math.floor(r.width * d), Math.floor(r.height * d)], canvas: [c.width, c.height], renderer: [rc.width, rc.height] };
  });
  const sameSizes = (z) => JSON.stringify(z.plot) === JSON.stringify(z.canvas) && JSON.stringify(z.plot) === JSON.stringify(z.renderer);
  await step('grid_first_view', async () => {
    const why = await gridProblems(page), z = await sizes();
    check('grid_first_view', !why && sameSizes(z), `${why} ${JSON.stringify(z)}`);
  });
  // Taller than wide, then wider: the home view frames the grid again (the
  // library's home view showed y in [-1, 1] whatever the width, cutting the
  // sides of a tall plot); the WebGL canvas follows the plot.
  for (const [w, h] of [[640, 960], [1300, 600], [1000, 720]]) {
    await step(`resize_${w}x${h}`, async () => {
      await page.setViewportSize({ width: w, height: h });
      await page.waitForTimeout(300);
      const why = await gridProblems(page), z = await sizes();
      check(`resize_${w}x${h}`, !why && sameSizes(z), `${why} ${JSON.stringify(z)}`);
    });
  }
  await step('resize_keeps_user_view', async () => {
    const box = await plotBox(page);
    await page.mouse.move(box[0] + box[2] / 2 + 40, box[1] + box[3] / 2 + 30);
    await page.mouse.wheel(0, -200);
    await page.waitForTimeout(400);
    const cam = () => page.evaluate(() => {
      const c = window.nlembedView.scatterplot.get('camera');
      return [c.distance[0], c.target[0], c.target[1]];
    });
    const before = await cam();
    await page.setViewportSize({ width: 900, height: 700 });
    await page.waitForTimeout(300);
    const after = await cam();
    check('resize_keeps_user_view', before[0] < 0.95 && after.every((v, k) => Math.abs(v - before[k]) < 1e-9),
      `camera ${before} -> ${after}`);
    await page.setViewportSize({ width: 1000, height: 720 });
  });
  check('grid_no_errors', errors.length === 0, errors.join('; '));
  await page.close();
}

// ----------------------------------------------------------- outliers.html
// page.html's 500 points and 3 far away: the first view frames the 500 as
// page.html does (their positions relative to the plot's centre, in units
// of its height, agree), the 3 are counted in the bar and marked by
// triangles on the plot's edge pointing to them, "Show all" brings every
// point into the plot and "Reset view" returns to the bulk.
{
  const relative = async (page, count) => page.evaluate((k) => {
    const v = window.nlembedView, r = document.getElementById('nle-plot').getBoundingClientRect();
    const cx = r.left + r.width / 2, cy = r.top + r.height / 2;
    return Array.from({ length: k }, (_, i) => {
      const [x, y] = v.screenPosition(i);
      return [(x - cx) / r.height, (y - cy) / r.height];
    });
  }, count);
  const a = await open('page.html');
  const want = await relative(a.page, 500);
  await a.page.close();
  const { page, errors } = await open('outliers.html');
  const n = await page.evaluate(() => window.nlembedView.n);
  await step('outliers_bulk_view', async () => {
    const got = await relative(page, 500);
    const worst = Math.max(...got.map((p, i) => Math.hypot(p[0] - want[i][0], p[1] - want[i][1])));
    check('outliers_bulk_view', n === 503 && worst < 1e-4, `${n} points; the 500 moved by up to ${worst} plot heights`);
  });
  await step('outliers_counted', async () => {
    const text = await page.textContent('#nle-outliers-text');
    check('outliers_counted', text.startsWith('3 points beyond the view'), text);
  });
  await step('outliers_marked', async () => {
    await page.waitForTimeout(200);
    const r = await page.evaluate(() => {
      const v = window.nlembedView, p = document.getElementById('nle-plot').getBoundingClientRect();
      return { marks: v.edgeMarks, w: p.width, h: p.height, left: p.left, top: p.top,
        pts: [500, 501, 502].map((i) => v.screenPosition(i)) };
    });
    const problems = [];
    const indices = r.marks.map((m) => m[0]).sort();
    if (JSON.stringify(indices) !== '[500,501,502]') problems.push(`marks for ${indices}`);
    for (const [i, ex, ey] of r.marks) {
      const [px, py] = r.pts[i - 500], cx = r.w / 2, cy = r.h / 2;
      const x = px - r.left, y = py - r.top;
      const edge = Math.min(ex, ey, r.w - ex, r.h - ey);
      let turn = Math.abs(Math.atan2(ey - cy, ex - cx) - Math.atan2(y - cy, x - cx));
      turn = Math.min(turn, 2 * Math.PI - turn);
      if (!(x < 0 || x > r.w || y < 0 || y > r.h)) problems.push(`point ${i} is in view`);
      if (Math.abs(edge - 8) > 0.5) problems.push(`mark ${i} is ${edge.toFixed(1)} px from the edge`);
      if (turn > 1e-3) problems.push(`mark ${i} is ${turn} rad off the direction to its point`);
    }
    // and drawn: the overlay has ink at each mark
    const inked = await page.evaluate((marks) => {
      const c = document.getElementById('nle-edge-marks'), d = devicePixelRatio, ctx = c.getContext('2d');
      return marks.map(([, x, y]) => ctx.getImageData(Math.round(x * d), Math.round(y * d), 1, 1).data[3] > 0);
    }, r.marks);
    if (!inked.every(Boolean)) problems.push(`marks drawn: ${inked}`);
    check('outliers_marked', problems.length === 0, problems.join('; '));
  });
  const inPlot = () => page.evaluate(() => {
    const v = window.nlembedView, r = document.getElementById('nle-plot').getBoundingClientRect();
    let inside = 0;
    for (let i = 0; i < v.n; i++) {
      const [x, y] = v.screenPosition(i);
      if (x >= r.left && x <= r.right && y >= r.top && y <= r.bottom) inside++;
    }
    return { inside, marks: v.edgeMarks.length };
  });
  await step('outliers_show_all', async () => {
    await page.click('#nle-show-all');
    await page.waitForTimeout(700);
    const r = await inPlot();
    check('outliers_show_all', r.inside === n && r.marks === 0, JSON.stringify(r));
  });
  await step('outliers_reset_view', async () => {
    await page.click('#nle-reset');
    await page.waitForTimeout(700);
    const got = await relative(page, 500), r = await inPlot();
    const worst = Math.max(...got.map((p, i) => Math.hypot(p[0] - want[i][0], p[1] - want[i][1])));
    check('outliers_reset_view', worst < 1e-4 && r.inside === 500 && r.marks === 3, `moved by ${worst}; ${JSON.stringify(r)}`);
  });
  check('outliers_no_errors', errors.length === 0, errors.join('; '));
  await page.close();
}
// and a map with no outlier says nothing of them
await step('no_outliers_no_note', async () => {
  const { page } = await open('page.html');
  const note = await page.$('#nle-outliers');
  check('no_outliers_no_note', note === null, 'an outlier note on page.html');
  await page.close();
});

await browser.close();
process.exit(failures ? 1 : 0);
