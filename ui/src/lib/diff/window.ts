// The maths of a windowed list with a fixed row height: which rows to render
// for a scroll position, and where to put them. Only those rows are in the
// DOM, so a diff of any length opens at once.

export interface ListWindow {
  /** First row to render. */
  start: number;
  /** One past the last row to render. */
  end: number;
  /** Where the first rendered row sits, in pixels from the top. */
  offset: number;
  /** The full list's height in pixels. */
  total: number;
}

/** Rows visible at `scrollTop` in a viewport `height` pixels high, plus
 * `overscan` rows either side so a quick scroll does not show a gap. */
export function listWindow(scrollTop: number, height: number, rowHeight: number, count: number, overscan = 12): ListWindow {
  const total = count * rowHeight;
  if (count === 0 || rowHeight <= 0) return { start: 0, end: 0, offset: 0, total: Math.max(0, total) };
  const maxTop = Math.max(0, total - Math.max(0, height));
  const top = Math.min(Math.max(0, scrollTop), maxTop);
  const first = Math.floor(top / rowHeight);
  const visible = Math.ceil(Math.max(0, height) / rowHeight) + 1;
  const start = Math.max(0, first - overscan);
  const end = Math.min(count, first + visible + overscan);
  return { start, end, offset: start * rowHeight, total };
}

/** The scroll position that puts row `index` at the top. */
export function scrollTopFor(index: number, rowHeight: number): number {
  return Math.max(0, index) * rowHeight;
}
