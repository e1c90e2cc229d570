// png.mjs — reads the PNG files chromium writes (8-bit grey, grey+alpha,
// RGB or RGBA, not interlaced) into RGBA pixels with node's zlib, and
// measures where a screenshot of `nlembed view`'s page has ink. Written for
// the tests: no dependency, no browser involved in checking the browser.
import { readFileSync } from 'node:fs';
import { inflateSync } from 'node:zlib';

export function readPng(bytes) {
  const b = typeof bytes === 'string' ? readFileSync(bytes) : bytes;
  if (b.toString('latin1', 1, 4) !== 'PNG') throw new Error('not a PNG');
  let p = 8, width = 0, height = 0, depth = 0, type = 0;
  const idat = [];
  while (p < b.length) {
    const len = b.readUInt32BE(p), tag = b.toString('latin1', p + 4, p + 8), d = b.subarray(p + 8, p + 8 + len);
    if (tag === 'IHDR') {
      width = d.readUInt32BE(0); height = d.readUInt32BE(4); depth = d[8]; type = d[9];
      if (d[12]) throw new Error('interlaced PNG');
    } else if (tag === 'IDAT') idat.push(d);
    p += 12 + len;
  }
  const ch = { 0: 1, 2: 3, 4: 2, 6: 4 }[type];
  if (depth !== 8 || !ch) throw new Error(`PNG colour type ${type}, depth ${depth}`);
  const raw = inflateSync(Buffer.concat(idat)), stride = width * ch;
  const data = new Uint8Array(width * height * 4);
  let prev = new Uint8Array(stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)], line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    const cur = new Uint8Array(stride);
    for (let i = 0; i < stride; i++) {
      const a = i >= ch ? cur[i - ch] : 0, up = prev[i], c = i >= ch ? prev[i - ch] : 0;
      let v = line[i];
      if (filter === 1) v += a;
      else if (filter === 2) v += up;
      else if (filter === 3) v += (a + up) >> 1;
      else if (filter === 4) {
        const q = a + up - c, pa = Math.abs(q - a), pb = Math.abs(q - up), pc = Math.abs(q - c);
        v += pa <= pb && pa <= pc ? a : pb <= pc ? up : c;
      }
      cur[i] = v & 255;
    }
    for (let x = 0; x < width; x++) {
      const o = 4 * (y * width + x), s = x * ch;
      if (ch >= 3) { data[o] = cur[s]; data[o + 1] = cur[s + 1]; data[o + 2] = cur[s + 2]; }
      else data[o] = data[o + 1] = data[o + 2] = cur[s];
      data[o + 3] = ch === 4 ? cur[s + 3] : ch === 2 ? cur[s + 1] : 255;
    }
    prev = cur;
  }
  return { width, height, data };
}

// The bounding box of the pixels in rect ([left, top, width, height]) that
// are not white (any channel below 200: the points, not anti-aliasing
// haze), and how many of them.
export function inkBox(img, [left, top, w, h]) {
  let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity, count = 0;
  for (let y = Math.max(0, Math.round(top)); y < Math.min(img.height, Math.round(top + h)); y++) {
    for (let x = Math.max(0, Math.round(left)); x < Math.min(img.width, Math.round(left + w)); x++) {
      const o = 4 * (y * img.width + x);
      if (img.data[o] < 200 || img.data[o + 1] < 200 || img.data[o + 2] < 200) {
        count++;
        if (x < x0) x0 = x;
        if (x > x1) x1 = x;
        if (y < y0) y0 = y;
        if (y > y1) y1 = y;
      }
    }
  }
  return { x0, x1, y0, y1, count };
}

// Where a map whose points span a square (the grid fixture) must be drawn
// in a plot [left, top, width, height]: the page maps the data's box to
// [-0.95, 0.95] of the shorter side with equal scales, centred; ink reaches
// a point's radius r beyond the outermost centres. Returns what is wrong,
// or '' when the ink's box is there within tol pixels.
export function squareMapProblems(img, plot, r, tol) {
  const [left, top, w, h] = plot;
  const half = 0.95 * Math.min(w, h) / 2, cx = left + w / 2, cy = top + h / 2;
  const want = { x0: cx - half - r, x1: cx + half + r, y0: cy - half - r, y1: cy + half + r };
  const got = inkBox(img, plot);
  if (got.count === 0) return 'no points drawn';
  const off = ['x0', 'x1', 'y0', 'y1'].filter((k) => !(Math.abs(got[k] - want[k]) <= tol));
  if (!off.length) return '';
  const f = (b) => `x ${Math.round(b.x0)}-${Math.round(b.x1)}, y ${Math.round(b.y0)}-${Math.round(b.y1)}`;
  return `points drawn over ${f(got)} (${got.count} px), want ${f(want)} within ${tol} px`;
}
