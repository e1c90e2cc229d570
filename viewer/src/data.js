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

// The positions mapped into [-1, 1]^2 (regl-scatterplot's normalised device
// coordinates) with one scale for both axes, so the picture keeps the
// embedding's shape; 5% margin.
export function normalise(xy, n) {
  let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
  for (let i = 0; i < n; i++) {
    const x = xy[2 * i], y = xy[2 * i + 1];
    if (x < x0) x0 = x;
    if (x > x1) x1 = x;
    if (y < y0) y0 = y;
    if (y > y1) y1 = y;
  }
  const span = Math.max(x1 - x0, y1 - y0);
  const scale = span > 0 ? 1.9 / span : 1;
  const cx = (x0 + x1) / 2, cy = (y0 + y1) / 2;
  const x = new Float32Array(n), y = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    x[i] = (xy[2 * i] - cx) * scale;
    y[i] = (xy[2 * i + 1] - cy) * scale;
  }
  return { x, y, toNdc: (px, py) => [(px - cx) * scale, (py - cy) * scale] };
}
