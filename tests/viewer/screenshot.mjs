// screenshot.mjs — `nlembed view`'s page as a plain headless chromium takes
// a picture of it, with no driver: `chromium --headless --screenshot
// --window-size=W,H page.html`. Its screen is 800 x 600 whatever the
// window, and it shoots once the page has loaded, with no wait for an
// animation frame: the plot must take its size from the layout and draw
// its first frame while the page loads. The page (tests/viewer.sh's
// grid.html) holds a square grid of points, so where they must be drawn is
// known from the window alone; several shots, some at once, to catch a
// first frame that comes late. Prints "ok NAME" or "FAIL NAME: why".
//
//   node tests/viewer/screenshot.mjs FIXTURES
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { readPng, squareMapProblems } from './png.mjs';

const dir = process.argv[2];
const chromium = process.env.CHROMIUM || '/usr/bin/chromium';
let failures = 0;
const check = (name, problems) => {
  if (problems.length) {
    failures++;
    console.log(`FAIL ${name}: ${problems.join('; ').replace(/\s+/g, ' ').slice(0, 600)}`);
  } else console.log(`ok ${name}`);
};

function shoot(page, [w, h], png) {
  const profile = mkdtempSync(join(dir, 'profile-'));
  const args = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync', `--user-data-dir=${profile}`,
    `--screenshot=${png}`, `--window-size=${w},${h}`, 'file://' + join(dir, page)];
  return new Promise((resolve) => {
    const p = spawn(chromium, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    p.stderr.on('data', (d) => { err += d; });
    const timer = setTimeout(() => p.kill('SIGKILL'), 90000);
    p.on('close', (code) => {
      clearTimeout(timer);
      rmSync(profile, { recursive: true, force: true });
      resolve(code === 0 ? '' : `chromium exit ${code}: ${err.slice(-300)}`);
    });
  });
}

// The plot: everything under the bar, whose bottom border is the first row
// of #ddd grey down the left edge.
function plotRect(img) {
  for (let y = 0; y < img.height; y++) {
    const o = 4 * (y * img.width + 2);
    if (img.data[o] === 221 && img.data[o + 1] === 221 && img.data[o + 2] === 221) {
      return [0, y + 1, img.width, img.height - y - 1];
    }
  }
  return null;
}

async function series(name, size, runs, atOnce) {
  const problems = [];
  for (let start = 0; start < runs; start += atOnce) {
    const batch = [];
    for (let k = start; k < Math.min(runs, start + atOnce); k++) {
      const png = join(dir, `shot-${name}-${k}.png`);
      batch.push(shoot('grid.html', size, png).then((err) => {
        if (err) return problems.push(`shot ${k}: ${err}`);
        const img = readPng(png);
        const plot = plotRect(img);
        if (img.width !== size[0] || img.height !== size[1]) return problems.push(`shot ${k}: ${img.width} x ${img.height}`);
        if (!plot) return problems.push(`shot ${k}: no bar found`);
        // 961 points: 8 px across (radius 4), as the page chooses below 1,000
        const why = squareMapProblems(img, plot, 4, 4);
        if (why) problems.push(`shot ${k} (plot ${plot.join(' ')}): ${why}`);
      }));
    }
    await Promise.all(batch);
  }
  check(name, problems);
}

await series('screenshot_landscape_1200x800', [1200, 800], 6, 3);
await series('screenshot_portrait_700x1000', [700, 1000], 2, 2);
process.exit(failures ? 1 : 0);
