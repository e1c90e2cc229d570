// main.js — the page `nlembed view` writes: a WebGL scatter plot
// (regl-scatterplot) of the embedding with pan and zoom, a tooltip (index,
// label, image), colours by label with a legend, lasso selection exported
// as a list of indices, and a search box for an index. Everything it needs
// is in the page; it loads nothing.
//
// window.nlembedView is the page's handle for scripts and tests: selection(),
// select(indices), search(index), screenPosition(index), tooltip(),
// firstFrameMs, ready (a promise).

import createScatterplot, { createRenderer } from 'regl-scatterplot';
import css from './style.css';
import { readPage, normalise } from './data.js';
import { classColour, cssColour, UNLABELLED } from './palette.js';

function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (v !== false && v != null) el.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children) el.append(c);
  return el;
}

// Point diameter and opacity fall with N as in `nlembed plot` (radius 4 px
// down to 0.5 px, opacity 0.9 down to 0.2), so 500 and 1,000,000 points
// both stay readable.
const autoSize = (n) => 2 * Math.min(4, Math.max(0.5, 4 * Math.pow(1000 / n, 0.25)));
const autoOpacity = (n) => Math.min(0.9, Math.max(0.2, 0.9 * Math.pow(2000 / n, 0.2)));

// A seeded random permutation. The points go to the plot in this order (it
// draws later points on top), so that no class hides another
// systematically; `perm` maps the plot's indices to the data's, `inv` back.
// (regl-scatterplot's pointOrder would do the same at 0.5 s more for a
// million points.)
function shuffledOrder(n) {
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  let s = 0x9e3779b9;
  for (let i = n - 1; i > 0; i--) {
    s ^= s << 13; s ^= s >>> 17; s ^= s << 5; // xorshift32
    const j = (s >>> 0) % (i + 1);
    const t = order[i]; order[i] = order[j]; order[j] = t;
  }
  return order;
}

function start() {
  document.head.append(h('style', {}, css));
  const view = { ready: null, firstFrameMs: null, timings: {} };
  window.nlembedView = view;
  let markReady;
  view.ready = new Promise((resolve) => { markReady = resolve; });

  const t0 = performance.now();
  view.timings.scriptStartMs = t0;
  const { meta, xy, labels, images } = readPage();
  const n = meta.n;
  const pos = normalise(xy, n);
  view.timings.decodeMs = performance.now() - t0;
  view.n = n;

  const names = meta.labels?.names || null;
  const nClasses = meta.labels ? meta.labels.classes : 0;
  const labelText = (c) => (names ? names[c] : String(c));
  const colours = [];
  for (let c = 0; c < Math.max(1, nClasses); c++) colours.push(nClasses ? classColour(c) : UNLABELLED);

  // ---- the page
  const count = h('span', { id: 'nle-count' }, `${n.toLocaleString('en-US')} points`);
  const panButton = h('button', { id: 'nle-mode-pan', title: 'drag to pan, wheel to zoom', 'aria-pressed': 'true' }, 'Pan');
  const lassoButton = h('button', { id: 'nle-mode-lasso', title: 'drag to select (or shift+drag in any mode)', 'aria-pressed': 'false' }, 'Lasso');
  const resetButton = h('button', { id: 'nle-reset', title: pos.outliers.length ? 'the bulk of the map' : 'the whole embedding' }, 'Reset view');
  // Points outside the bulk (data.js, bulkBox) are off the first view: the
  // bar says how many, "Show all" frames every point, and markers on the
  // plot's edge point to those out of sight.
  const nOut = pos.outliers.length;
  const outlierNote = nOut ? h('span', { class: 'nle-group', id: 'nle-outliers' },
    h('span', { id: 'nle-outliers-text', title: 'points far from the rest, marked by triangles at the edge of the plot' },
      `${nOut.toLocaleString('en-US')} point${nOut === 1 ? '' : 's'} beyond the view`),
    h('button', { id: 'nle-show-all', title: 'zoom out to every point' }, 'Show all')) : '';
  const selCount = h('span', { id: 'nle-selected' }, '0 selected');
  const copyButton = h('button', { id: 'nle-copy', disabled: true, title: 'copy the selected indices (a JSON list)' }, 'Copy');
  const saveButton = h('button', { id: 'nle-download', disabled: true, title: 'download the selected indices as selection.json' }, 'Download');
  const searchBox = h('input', { id: 'nle-search', type: 'text', inputmode: 'numeric', placeholder: `index 0-${n - 1}`, 'aria-label': 'point index' });
  const searchMsg = h('span', { id: 'nle-search-msg' });
  const searchForm = h('form', { class: 'nle-group', id: 'nle-search-form' }, searchBox, h('button', { type: 'submit' }, 'Find'), searchMsg);
  const bar = h('div', { id: 'nle-bar' },
    h('span', { id: 'nle-title', title: meta.title }, meta.title), count,
    h('span', { class: 'nle-group' }, panButton, lassoButton, resetButton), outlierNote,
    h('span', { class: 'nle-group' }, selCount, copyButton, saveButton),
    searchForm,
    h('span', { id: 'nle-help' }, 'drag: pan · wheel: zoom · shift+drag: lasso · Esc / double-click: clear'));
  const plot = h('div', { id: 'nle-plot' });
  const canvas = h('canvas');
  const edgeMarks = h('canvas', { id: 'nle-edge-marks' });
  plot.append(canvas, edgeMarks);
  const tooltip = h('div', { id: 'nle-tooltip', role: 'tooltip' });
  const main = h('div', { id: 'nle-main' }, plot, tooltip);
  document.body.append(h('div', { id: 'nle-app' }, bar, main));

  // ---- the scatter plot, sized by the page's layout
  // regl-scatterplot's default renderer sizes its WebGL canvas by the window
  // and the screen, min(innerWidth, screen.availWidth), and copies the centre
  // of it to the plot: a headless browser's screen is 800 x 600 whatever its
  // window, so the map was cut to a centred 800 x 600 box. The viewer's
  // renderer takes the plot's size from the layout: now, before the first
  // frame, and on every resize.
  const layoutSize = () => {
    const r = plot.getBoundingClientRect();
    return [Math.max(1, r.width), Math.max(1, r.height)];
  };
  const renderer = createRenderer({ canvas: document.createElement('canvas') });
  // The scatter plot draws from the renderer's animation-frame loop; the
  // viewer also draws a frame itself (drawNow) where waiting for the next
  // animation frame would leave the plot blank: after the script (a
  // screenshot taken at the page's load event had the legend and no points
  // in about 2 of 10 runs) and after a resize, which clears the canvas.
  const frameFns = new Set();
  const onFrame = renderer.onFrame;
  renderer.onFrame = (fn) => {
    frameFns.add(fn);
    const cancel = onFrame(fn);
    return () => { frameFns.delete(fn); cancel(); };
  };
  const fitRenderer = ([w, h]) => {
    const { maxTextureSize, maxRenderbufferSize } = renderer.regl.limits;
    const dpr = window.devicePixelRatio, most = Math.min(maxTextureSize, maxRenderbufferSize) / dpr;
    const rw = Math.min(w, most), rh = Math.min(h, most);
    if (renderer.canvas.width !== Math.floor(rw * dpr) || renderer.canvas.height !== Math.floor(rh * dpr)) {
      renderer.resize(rw, rh);
    }
  };
  const size0 = layoutSize();
  fitRenderer(size0);
  // The camera that frames a box of the normalised coordinates in a plot of
  // size [w, h], the box filling 95% of it across its tighter direction.
  // regl-scatterplot's home view shows y from -1 to 1 over the plot's
  // height whatever its width: a plot taller than wide cut the map's sides.
  const fit = (box, [w, h]) => ({
    target: [box.x + box.width / 2, box.y + box.height / 2],
    distance: Math.max(box.height / 2, box.width / 2 / (w / h)) / 0.95 || 1,
  });
  const home0 = fit(pos.bulk, size0);
  const scatterplot = createScatterplot({
    renderer,
    canvas,
    // The layout's size now (the library's 'auto' would measure it only at
    // the next animation frame); 'auto' below for the resizes.
    width: size0[0],
    height: size0[1],
    cameraTarget: home0.target,
    cameraDistance: home0.distance,
    backgroundColor: [1, 1, 1, 1],
    pointColor: colours.map(([r, g, b]) => [r, g, b, 1]),
    pointColorHover: [0, 0, 0, 1],
    pointColorActive: [0.85, 0.1, 0.1, 1],
    pointSize: meta.pointSize > 0 ? meta.pointSize : autoSize(n),
    pointSizeSelected: 1,
    pointOutlineWidth: 1,
    opacity: meta.opacity > 0 ? meta.opacity : autoOpacity(n),
    opacityInactiveScale: 0.3, // with a selection, the other points fade
    colorBy: nClasses ? 'valueA' : null,
    lassoColor: [0.1, 0.1, 0.1, 1],
    reticleColor: [0, 0, 0, 0.5],
    lassoMinDelay: 10,
    lassoMinDist: 2,
    // The spatial index on this thread: handing a million points to a
    // worker (regl-scatterplot's choice from 1,000,000 on) took 3 times longer.
    spatialIndexUseWorker: false,
  });
  view.scatterplot = scatterplot;
  view.timings.createdMs = performance.now();
  const drawNow = () => {
    scatterplot.redraw();
    renderer.refresh(); // regl's viewport follows the renderer's canvas
    for (const fn of frameFns) fn();
  };
  // With 'auto' the library's observer of the canvas (100% of the plot)
  // resizes the canvas, its camera and scales on a resize; this observer,
  // made after it and so called after it in the same frame, resizes the
  // renderer and draws before the frame is painted.
  // A view still at home (the bulk framed, as at the start or after "Reset
  // view") is framed again for the new size; one the user moved is kept.
  scatterplot.set({ width: 'auto', height: 'auto' });
  let home = home0;
  new ResizeObserver(() => {
    const size = layoutSize(), camera = scatterplot.get('camera');
    const atHome = Math.abs(camera.distance[0] - home.distance) <= 1e-6 * home.distance &&
      Math.hypot(camera.target[0] - home.target[0], camera.target[1] - home.target[1]) <= 1e-6 * home.distance;
    home = fit(pos.bulk, size);
    if (atHome) scatterplot.zoomToLocation(home.target, home.distance);
    fitRenderer(size);
    drawNow();
  }).observe(plot);

  // 'drawing' is published synchronously by the frame that drew (its 'draw'
  // event comes later, from a timer).
  scatterplot.subscribe('drawing', () => {
    if (view.firstFrameMs !== null) return;
    view.firstFrameMs = performance.now(); // since navigation start
    document.body.dataset.firstFrame = String(Math.round(view.firstFrameMs));
    markReady(view);
  }, 1);

  const perm = shuffledOrder(n), inv = new Uint32Array(n);
  const points = { x: new Float32Array(n), y: new Float32Array(n) };
  if (labels) points.valueA = new labels.constructor(n);
  for (let j = 0; j < n; j++) {
    const i = perm[j];
    inv[i] = j;
    points.x[j] = pos.x[i];
    points.y[j] = pos.y[i];
    if (labels) points.valueA[j] = labels[i];
  }
  const toPlot = (indices) => Array.from(indices, (i) => inv[i]);
  const tDraw = performance.now();
  scatterplot.draw(points, { zDataType: 'categorical' }).then(() => {
    view.timings.drawMs = performance.now() - tDraw;
  });
  // The points reach the plot through promises that all settle in this
  // script's microtasks (the spatial index is built on this thread): the
  // first frame is drawn then, before the page's load event, rather than at
  // an animation frame that may come after a screenshot.
  (async () => {
    for (let turn = 0; view.firstFrameMs === null && turn < 1000; turn++) {
      await null;
      drawNow();
    }
  })();

  // ---- selection
  let selection = [];
  const setSelection = (indices) => {
    selection = Array.from(Uint32Array.from(indices).sort()); // numeric sort of a typed array: fast at 10^6
    selCount.textContent = `${selection.length.toLocaleString('en-US')} selected`;
    copyButton.disabled = saveButton.disabled = selection.length === 0;
  };
  // regl-scatterplot also takes the mouse-up that closes a lasso near where
  // it started for a click, which selects the point under the cursor in
  // place of the lasso's points: the click that ends a lasso stops here.
  let lassoing = false;
  scatterplot.subscribe('lassoStart', () => { lassoing = true; });
  plot.addEventListener('mousedown', () => { lassoing = false; }, true);
  plot.addEventListener('click', (e) => {
    if (lassoing) e.stopPropagation();
    lassoing = false;
  }, true);
  scatterplot.subscribe('select', ({ points: p }) => setSelection(Array.from(p, (j) => perm[j])));
  scatterplot.subscribe('deselect', () => setSelection([]));
  const selectionText = () => JSON.stringify(selection) + '\n';
  copyButton.addEventListener('click', () => {
    const text = selectionText();
    const fallback = () => {
      const ta = h('textarea', { style: 'position:fixed;left:-1000px' }, text);
      document.body.append(ta);
      ta.select();
      document.execCommand('copy');
      ta.remove();
    };
    if (navigator.clipboard?.writeText) navigator.clipboard.writeText(text).catch(fallback);
    else fallback();
    copyButton.textContent = 'Copied';
    setTimeout(() => { copyButton.textContent = 'Copy'; }, 1200);
  });
  saveButton.addEventListener('click', () => {
    const url = URL.createObjectURL(new Blob([selectionText()], { type: 'application/json' }));
    const a = h('a', { href: url, download: 'selection.json' });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  });

  const setMode = (mode) => {
    scatterplot.set({ mouseMode: mode });
    panButton.setAttribute('aria-pressed', String(mode === 'panZoom'));
    lassoButton.setAttribute('aria-pressed', String(mode === 'lasso'));
  };
  panButton.addEventListener('click', () => setMode('panZoom'));
  lassoButton.addEventListener('click', () => setMode('lasso'));
  resetButton.addEventListener('click', () => scatterplot.zoomToLocation(home.target, home.distance,
    { transition: true, transitionDuration: 300 }));

  // ---- outliers: "Show all", and a triangle on the plot's edge for each
  // outlier out of sight, pointing to it, in its class colour (redrawn with
  // every frame of the plot)
  if (nOut) {
    outlierNote.querySelector('#nle-show-all').addEventListener('click', () => {
      const all = fit(pos.all, layoutSize());
      scatterplot.zoomToLocation(all.target, all.distance, { transition: true, transitionDuration: 300 });
    });
    const marked = pos.outliers.subarray(0, 5000);
    view.edgeMarks = [];
    scatterplot.subscribe('drawing', () => {
      const dpr = window.devicePixelRatio, W = plot.clientWidth, H = plot.clientHeight;
      if (edgeMarks.width !== Math.round(W * dpr) || edgeMarks.height !== Math.round(H * dpr)) {
        edgeMarks.width = Math.round(W * dpr);
        edgeMarks.height = Math.round(H * dpr);
      }
      const ctx = edgeMarks.getContext('2d');
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      ctx.clearRect(0, 0, W, H);
      const m = 8, cx = W / 2, cy = H / 2;
      view.edgeMarks = [];
      for (const i of marked) {
        const [px, py] = scatterplot.getScreenPosition(inv[i]);
        if (px >= 0 && px <= W && py >= 0 && py <= H) continue;
        // Where the line from the centre to the point leaves the plot, less
        // a margin; the triangle points along that line.
        const dx = px - cx, dy = py - cy;
        const t = Math.min(Math.abs((cx - m) / (dx || 1e-9)), Math.abs((cy - m) / (dy || 1e-9)));
        const ex = cx + dx * t, ey = cy + dy * t, len = Math.hypot(dx, dy), ux = dx / len, uy = dy / len;
        ctx.fillStyle = cssColour(colours[labels ? labels[i] : 0]);
        ctx.beginPath();
        ctx.moveTo(ex + 6 * ux, ey + 6 * uy);
        ctx.lineTo(ex - 4 * ux - 4 * uy, ey - 4 * uy + 4 * ux);
        ctx.lineTo(ex - 4 * ux + 4 * uy, ey - 4 * uy - 4 * ux);
        ctx.closePath();
        ctx.fill();
        view.edgeMarks.push([i, ex, ey]);
      }
    });
  }

  // ---- legend: class colours and counts; a click selects the class
  // (shift+click adds it to the selection)
  if (nClasses) {
    const counts = new Uint32Array(nClasses);
    for (let i = 0; i < n; i++) counts[labels[i]]++;
    const shown = [];
    for (let c = 0; c < nClasses && shown.length < 60; c++) if (counts[c]) shown.push(c);
    const legend = h('div', { id: 'nle-legend' });
    for (const c of shown) {
      legend.append(h('div', {
        class: 'nle-entry', 'data-class': c, title: 'click: select this class (shift: add)',
        onclick: (e) => {
          const members = [];
          for (let i = 0; i < n; i++) if (labels[i] === c) members.push(i);
          scatterplot.select(toPlot(members), { merge: e.shiftKey });
        },
      }, h('span', { class: 'nle-swatch', style: `background:${cssColour(colours[c])}` }),
      h('span', {}, labelText(c)), h('span', { class: 'nle-n' }, counts[c].toLocaleString('en-US'))));
    }
    let present = 0;
    for (let c = 0; c < nClasses; c++) if (counts[c]) present++;
    if (present > shown.length) legend.append(h('div', { class: 'nle-n' }, `… ${present - shown.length} more classes`));
    main.append(legend);
  }

  // ---- tooltip: index, label and, with --images, the image
  let tipIndex = -1;
  const placeTooltip = () => {
    if (tipIndex < 0) return;
    const [px, py] = scatterplot.getScreenPosition(inv[tipIndex]);
    const w = tooltip.offsetWidth, hgt = tooltip.offsetHeight;
    const W = main.clientWidth, H = main.clientHeight;
    let left = px + 14, top = py + 14;
    if (left + w > W) left = Math.max(0, px - 14 - w);
    if (top + hgt > H) top = Math.max(0, py - 14 - hgt);
    tooltip.style.left = `${left}px`;
    tooltip.style.top = `${top}px`;
  };
  const imageCanvas = (i) => {
    const { width, height, channels } = images;
    const px = images.row(i);
    if (!px) return h('div', { class: 'nle-loading' }, 'image: still loading…');
    const c = h('canvas', { width, height });
    const scale = Math.max(1, Math.round(96 / Math.max(width, height)));
    c.style.width = `${width * scale}px`;
    c.style.height = `${height * scale}px`;
    const ctx = c.getContext('2d');
    const img = ctx.createImageData(width, height);
    for (let p = 0; p < width * height; p++) {
      const r = channels === 3 ? px[3 * p] : px[p];
      img.data[4 * p] = r;
      img.data[4 * p + 1] = channels === 3 ? px[3 * p + 1] : r;
      img.data[4 * p + 2] = channels === 3 ? px[3 * p + 2] : r;
      img.data[4 * p + 3] = 255;
    }
    ctx.putImageData(img, 0, 0);
    return c;
  };
  const showTooltip = (i) => {
    tipIndex = i;
    tooltip.replaceChildren(h('div', { class: 'nle-index' }, `#${i}`));
    tooltip.dataset.index = String(i);
    if (labels) {
      const c = labels[i];
      tooltip.dataset.label = labelText(c);
      tooltip.append(h('div', { class: 'nle-label' },
        h('span', { class: 'nle-swatch', style: `background:${cssColour(colours[c])}` }), labelText(c)));
    } else {
      delete tooltip.dataset.label;
    }
    if (images) tooltip.append(imageCanvas(i));
    tooltip.style.display = 'block';
    placeTooltip();
  };
  const hideTooltip = () => {
    tipIndex = -1;
    tooltip.style.display = 'none';
    delete tooltip.dataset.index;
  };
  // A tooltip shown before the images were parsed gets its image now.
  document.addEventListener('DOMContentLoaded', () => { if (tipIndex >= 0 && images) showTooltip(tipIndex); });
  scatterplot.subscribe('pointover', (j) => showTooltip(perm[j]));
  scatterplot.subscribe('pointout', hideTooltip);
  scatterplot.subscribe('view', placeTooltip);

  // ---- search: centre on a point, highlight it and show its tooltip
  const search = (text) => {
    const s = String(text).trim();
    const i = /^\d+$/.test(s) ? Number(s) : NaN;
    if (!(i >= 0 && i < n)) {
      searchMsg.textContent = `no point "${s}" (0-${n - 1})`;
      return Promise.resolve(false);
    }
    searchMsg.textContent = '';
    const distance = scatterplot.get('camera').distance[0];
    return Promise.resolve(scatterplot.zoomToLocation([pos.x[i], pos.y[i]], distance,
      { transition: true, transitionDuration: 300 })).then(() => {
      scatterplot.hover(inv[i], { showReticleOnce: true, preventEvent: true });
      showTooltip(i);
      return true;
    });
  };
  searchForm.addEventListener('submit', (e) => {
    e.preventDefault();
    search(searchBox.value);
  });

  document.addEventListener('keydown', (e) => {
    if (e.target instanceof HTMLInputElement) return;
    if (e.key === 'l' || e.key === 'L') setMode('lasso');
    else if (e.key === 'p' || e.key === 'P') setMode('panZoom');
    else if (e.key === '/') { e.preventDefault(); searchBox.focus(); }
  });

  Object.assign(view, {
    meta,
    selection: () => selection.slice(),
    select: (indices) => scatterplot.select(toPlot(indices)),
    search,
    // Where point i is drawn, in the page's CSS pixels (for mouse events).
    screenPosition: (i) => {
      const [x, y] = scatterplot.getScreenPosition(inv[i]);
      const r = canvas.getBoundingClientRect();
      return [r.left + x, r.top + y];
    },
    tooltip: () => (tipIndex < 0 ? null : { index: tipIndex, label: tooltip.dataset.label ?? null }),
    setMode,
  });
}

try {
  start();
} catch (err) {
  const msg = /webgl/i.test(String(err)) || !document.createElement('canvas').getContext('webgl')
    ? `This page needs WebGL, which this browser does not offer (${err.message || err}).`
    : `The viewer failed: ${err.message || err}`;
  document.body.append(Object.assign(document.createElement('div'), { id: 'nle-error', textContent: msg }));
  window.nlembedView = { error: String(err.message || err) };
}
