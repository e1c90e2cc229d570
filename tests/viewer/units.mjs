// units.mjs — the viewer's own arithmetic under node, against references
// written here: the quickselect behind the bulk's fences (viewer/src/data.js)
// against a sort, on random, tied, sorted and reversed arrays; bulkBox
// against its rule computed by sorting; normalise's framing of the bulk.
// Prints "ok NAME" or "FAIL NAME: why".
import { selectKth, bulkBox, normalise } from '../../viewer/src/data.js';

let failures = 0;
const check = (name, cond, why) => {
  if (cond) console.log(`ok ${name}`);
  else { failures++; console.log(`FAIL ${name}: ${why}`); }
};
let seed = 12345;
const rand = () => { seed = (seed * 1103515245 + 12345) >>> 0; return seed / 4294967296; };

{
  const wrong = [];
  for (let trial = 0; trial < 400; trial++) {
    const n = 1 + Math.floor(rand() * (trial < 300 ? 60 : 5000)), kind = trial % 4;
    const v = new Float32Array(n);
    for (let i = 0; i < n; i++) v[i] = kind === 0 ? rand() : kind === 1 ? Math.floor(rand() * 3) : kind === 2 ? i : n - i;
    const sorted = Float32Array.from(v).sort();
    const k0 = Math.floor(rand() * n), k1 = k0 + Math.floor(rand() * (n - k0));
    const w = Float32Array.from(v);
    const a = selectKth(w, k0), b = selectKth(w, k1, k0);
    if (a !== sorted[k0] || b !== sorted[k1]) wrong.push(`n ${n} kind ${kind}: ${a} ${b} vs ${sorted[k0]} ${sorted[k1]}`);
  }
  check('select_kth_vs_sort', wrong.length === 0, wrong.slice(0, 3).join('; '));
}

{
  // the rule, by sorting: fences from the 1% and 99% order statistics
  // widened by half their distance; outliers outside either axis's fence
  const wrong = [];
  for (let trial = 0; trial < 60; trial++) {
    const n = 20 + Math.floor(rand() * 3000), xy = new Float32Array(2 * n);
    for (let i = 0; i < 2 * n; i++) xy[i] = rand() - 0.5;
    for (let k = 0; k < trial % 5; k++) xy[Math.floor(rand() * 2 * n)] = (rand() < 0.5 ? -1 : 1) * (2 + 10 * rand());
    const fence = (a) => {
      const s = Array.from({ length: n }, (_, i) => xy[2 * i + a]).sort((p, q) => p - q);
      const lo = s[Math.floor(0.01 * (n - 1))], hi = s[Math.floor(0.99 * (n - 1))];
      return [lo - (hi - lo) / 2, hi + (hi - lo) / 2];
    };
    const fx = fence(0), fy = fence(1), want = [];
    for (let i = 0; i < n; i++) {
      const x = xy[2 * i], y = xy[2 * i + 1];
      if (x < fx[0] || x > fx[1] || y < fy[0] || y > fy[1]) want.push(i);
    }
    const got = Array.from(bulkBox(xy, n).outliers);
    if (JSON.stringify(got) !== JSON.stringify(want)) wrong.push(`n ${n}: ${got} vs ${want}`);
  }
  check('bulk_outliers_vs_rule', wrong.length === 0, wrong.slice(0, 3).join('; '));
}

{
  // a 1 x 2 box of points and one far away: the box maps to [-0.475, 0.475]
  // x [-0.95, 0.95], the far point outside, `all` covering it
  const pts = [];
  for (let i = 0; i <= 10; i++) for (let j = 0; j <= 20; j++) pts.push(3 + i / 10, 5 + j / 10);
  pts.push(100, 5);
  const n = pts.length / 2, p = normalise(Float32Array.from(pts), n);
  const close = (a, b) => Math.abs(a - b) < 1e-5;
  const b = p.bulk, a = p.all;
  check('normalise_frames_bulk', Array.from(p.outliers).join() === String(n - 1) &&
    close(b.x, -0.475) && close(b.width, 0.95) && close(b.y, -0.95) && close(b.height, 1.9) &&
    close(p.x[n - 1], (100 - 3.5) * 1.9 / 2) && close(a.x + a.width, p.x[n - 1]),
  JSON.stringify({ outliers: Array.from(p.outliers), bulk: b, all: a }));
}
process.exit(failures ? 1 : 0);
