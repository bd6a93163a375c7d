import { describe, expect, it } from "vitest";
import { listWindow, scrollTopFor } from "./window";

describe("listWindow", () => {
  it("renders the visible rows plus overscan at the top", () => {
    expect(listWindow(0, 100, 20, 5000, 2)).toEqual({ start: 0, end: 8, offset: 0, total: 100_000 });
  });

  it("moves with the scroll position and places the rows where they belong", () => {
    const w = listWindow(1000, 100, 20, 5000, 2);
    // Row 50 is the first visible; 6 rows fit (5 + 1 partly), 2 either side.
    expect(w).toEqual({ start: 48, end: 58, offset: 960, total: 100_000 });
  });

  it("never renders past the end, however far it is scrolled", () => {
    const w = listWindow(1e9, 100, 20, 5000, 2);
    expect(w.end).toBe(5000);
    expect(w.start).toBeGreaterThan(4990);
    expect(w.offset).toBe(w.start * 20);
  });

  it("keeps the number of rendered rows small for a huge list", () => {
    const w = listWindow(123_456, 800, 20, 1_000_000);
    expect(w.end - w.start).toBeLessThan(80);
  });

  it("handles empty lists, negative scrolls and lists shorter than the viewport", () => {
    expect(listWindow(0, 500, 20, 0)).toEqual({ start: 0, end: 0, offset: 0, total: 0 });
    expect(listWindow(-50, 500, 20, 3)).toEqual({ start: 0, end: 3, offset: 0, total: 60 });
  });

  it("scrolls a row to the top", () => {
    expect(scrollTopFor(42, 20)).toBe(840);
    expect(scrollTopFor(-1, 20)).toBe(0);
  });
});
