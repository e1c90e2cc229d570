// palette.js — class colours, the same as `nlembed plot` (cli/plot.c): the
// ten "tab10" colours, then darker and lighter shades of them.

const TAB10 = [
  [0.122, 0.467, 0.706], [1.0, 0.498, 0.055], [0.173, 0.627, 0.173], [0.839, 0.153, 0.157],
  [0.58, 0.404, 0.741], [0.549, 0.337, 0.294], [0.89, 0.467, 0.761], [0.498, 0.498, 0.498],
  [0.737, 0.741, 0.133], [0.09, 0.745, 0.812],
];

export function classColour(c) {
  const shade = Math.floor(c / 10) % 3;
  const f = shade === 0 ? 1.0 : shade === 1 ? 0.6 : 1.3;
  return TAB10[c % 10].map((v) => Math.min(1, v * f));
}

export const UNLABELLED = [0.2, 0.4, 0.7];

export function cssColour([r, g, b]) {
  return `rgb(${Math.round(r * 255)}, ${Math.round(g * 255)}, ${Math.round(b * 255)})`;
}
