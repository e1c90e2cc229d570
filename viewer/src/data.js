// data.js — what `nlembed view` put into the page: a JSON header and
// base64 blocks (float32 positions, uint8/uint16 label codes, uint8 images),
// each in a <script type="application/octet-stream"> element.

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const VALUE = new Int16Array(128).fill(-1);
for (let i = 0; i < ALPHABET.length; i++) VALUE[ALPHABET.charCodeAt(i)] = i;

// Decodes text[from, to) (a run of whole 4-character groups, '=' padding
// allowed at the end) into a new Uint8Array. A hand loop rather than atob:
// no intermediate binary string of the whole block (12 MB at a million
// points), and a slice can be decoded on its own (an image on hover).
export function decodeBase64(text, from = 0, to = text.length) {
  let end = to;
  while (end > from && text.charCodeAt(end - 1) === 61 /* = */) end--;
  const n = Math.floor(((end - from) * 3) / 4);
  const out = new Uint8Array(n);
  let o = 0;
  let i = from;
  for (; i + 4 <= end; i += 4) {
    const v =
      (VALUE[text.charCodeAt(i)] << 18) |
      (VALUE[text.charCodeAt(i + 1)] << 12) |
      (VALUE[text.charCodeAt(i + 2)] << 6) |
      VALUE[text.charCodeAt(i + 3)];
    out[o++] = v >> 16;
    out[o++] = (v >> 8) & 255;
    out[o++] = v & 255;
  }
  const rest = end - i; // 2 or 3 characters before the padding
  if (rest >= 2) {
    const v = (VALUE[text.charCodeAt(i)] << 18) | (VALUE[text.charCodeAt(i + 1)] << 12) |
      (rest === 3 ? VALUE[text.charCodeAt(i + 2)] << 6 : 0);
    out[o++] = v >> 16;
    if (rest === 3) out[o++] = (v >> 8) & 255;
  }
  return out;
}

// The text of a data element, which is then removed from the document (the
// page keeps one copy of each block, not two).
function take(id) {
  const el = document.getElementById(id);
  if (!el) return null;
  const text = el.textContent.trim();
  el.remove();
  return text;
}

// Bytes [start, start + length) of the base64 text: decodes only the groups
// that hold them.
export function sliceBase64(text, start, length) {
  const g0 = Math.floor(start / 3);
  const g1 = Math.ceil((start + length) / 3);
  const bytes = decodeBase64(text, g0 * 4, Math.min(text.length, g1 * 4));
  const skip = start - g0 * 3;
  return bytes.subarray(skip, skip + length);
}

export function readPage() {
  const meta = JSON.parse(take('nle-meta'));
  const xyBytes = decodeBase64(take('nle-xy'));
  const xy = new Float32Array(xyBytes.buffer, 0, 2 * meta.n); // little-endian, as written
  let labels = null;
  if (meta.labels) {
    const b = decodeBase64(take('nle-labels'));
    labels = meta.labels.type === 'uint16' ? new Uint16Array(b.buffer, 0, meta.n) : b.subarray(0, meta.n);
  }
  let images = null;
  if (meta.images) {
    const { width, height, channels } = meta.images;
    const size = width * height * channels;
    // The images' block comes after the script, so that the plot is drawn
    // while the browser still parses it: it is read once the document is
    // (row() gives null until then). Rows are decoded on demand, one at a
    // time: the page never holds all the images as pixels (55 MB for
    // Fashion-MNIST).
    let text = null;
    const ready = () => {
      if (text === null && document.readyState !== 'loading') text = take('nle-images') || '';
      return text;
    };
    images = { width, height, channels, row: (i) => (ready() ? sliceBase64(text, i * size, size) : null) };
  }
  return { meta, xy, labels, images };
}

// The bulk of the map: per axis, the fence is the range between the 1% and
// 99% quantiles (the values at sorted index floor(p (N - 1))) widened by half
// its length on each side; a point outside the fence on either axis is an
// outlier. A few points far from the rest (a t-SNE of single cells flings a
// handful of very high-count cells ~7 times as far as the clusters reach)
// would otherwise shrink the clusters to a fifth of the view. The box is that
// of the points inside the fences: all of them when there is no outlier, so
// an ordinary map is framed by its whole extent as before. `nlembed plot`
// frames its picture by the same rule (cli/plot.c, bulk_box).
export const BULK_QUANTILE = 0.01, BULK_WIDEN = 0.5;

// Moves the k-th smallest of v[from..to] to v[k] (elements below it before,
// above it after): Hoare's quickselect with a median-of-three pivot, linear
// time, where sorting a million coordinates took 0.3 s.
export function selectKth(v, k, from = 0, to = v.length - 1) {
  while (to > from) {
    const mid = (from + to) >> 1;
    const a = v[from], b = v[mid], c = v[to];
    const pivot = a < b ? (b < c ? b : a < c ? c : a) : (a < c ? a : b < c ? c : b);
    let i = from, j = to;
    while (i <= j) {
      while (v[i] < pivot) i++;
      while (v[j] > pivot) j--;
      if (i <= j) {
        const t = v[i]; v[i] = v[j]; v[j] = t;
        i++; j--;
      }
    }
    if (k <= j) to = j;
    else if (k >= i) from = i;
    else return v[k];
  }
  return v[k];
}

export function bulkBox(xy, n) {
  const fence = (axis) => {
    const v = new Float32Array(n);
    for (let i = 0; i < n; i++) v[i] = xy[2 * i + axis];
    const k0 = Math.floor(BULK_QUANTILE * (n - 1)), k1 = Math.floor((1 - BULK_QUANTILE) * (n - 1));
    const lo = selectKth(v, k0), hi = selectKth(v, k1, k0);
    return [lo - BULK_WIDEN * (hi - lo), hi + BULK_WIDEN * (hi - lo)];
  };
  const [fx0, fx1] = fence(0), [fy0, fy1] = fence(1);
  let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
  const outliers = [];
  for (let i = 0; i < n; i++) {
    const x = xy[2 * i], y = xy[2 * i + 1];
    if (x < fx0 || x > fx1 || y < fy0 || y > fy1) {
      outliers.push(i);
      continue;
    }
    if (x < x0) x0 = x;
    if (x > x1) x1 = x;
    if (y < y0) y0 = y;
    if (y > y1) y1 = y;
  }
  return { x0, x1, y0, y1, outliers: Uint32Array.from(outliers) };
}

// The positions mapped to regl-scatterplot's normalised device coordinates
// with one scale for both axes, so the picture keeps the embedding's shape:
// the bulk's box (bulkBox) fills [-1, 1]^2 less a 5% margin, the view a
// reset returns to; outliers fall outside it. `bulk` and `all` are the boxes
// of the bulk and of every point in those coordinates.
export function normalise(xy, n) {
  const bulk = n > 0 ? bulkBox(xy, n) : { x0: 0, x1: 0, y0: 0, y1: 0, outliers: new Uint32Array(0) };
  const span = Math.max(bulk.x1 - bulk.x0, bulk.y1 - bulk.y0);
  const scale = span > 0 ? 1.9 / span : 1;
  const cx = (bulk.x0 + bulk.x1) / 2, cy = (bulk.y0 + bulk.y1) / 2;
  const x = new Float32Array(n), y = new Float32Array(n);
  let ax0 = Infinity, ax1 = -Infinity, ay0 = Infinity, ay1 = -Infinity;
  for (let i = 0; i < n; i++) {
    x[i] = (xy[2 * i] - cx) * scale;
    y[i] = (xy[2 * i + 1] - cy) * scale;
    ax0 = Math.min(ax0, x[i]); ax1 = Math.max(ax1, x[i]);
    ay0 = Math.min(ay0, y[i]); ay1 = Math.max(ay1, y[i]);
  }
  const [bx0, by0] = [(bulk.x0 - cx) * scale, (bulk.y0 - cy) * scale];
  return { x, y, outliers: bulk.outliers, bulk: { x: bx0, y: by0, width: (bulk.x1 - bulk.x0) * scale, height: (bulk.y1 - bulk.y0) * scale },
    all: { x: ax0, y: ay0, width: ax1 - ax0, height: ay1 - ay0 },
    toNdc: (px, py) => [(px - cx) * scale, (py - cy) * scale] };
}
