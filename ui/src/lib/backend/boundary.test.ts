// The architecture's rule for the window: every backend call goes through
// one module (src/lib/backend/tauri.ts is the only importer of @tauri-apps),
// and no component renders raw HTML (agent text is untrusted).
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";

const SRC = join(import.meta.dirname, "../..");

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return files(path);
    return /\.(ts|svelte)$/.test(name) && !/\.test\.ts$/.test(name) ? [path] : [];
  });
}

describe("the UI's boundaries", () => {
  const all = files(SRC);

  it("finds the sources", () => {
    expect(all.length).toBeGreaterThan(10);
  });

  it("imports @tauri-apps only in the backend module", () => {
    const importers = all
      .filter((f) => /from\s+["']@tauri-apps\//.test(readFileSync(f, "utf8")))
      .map((f) => relative(SRC, f));
    expect(importers).toEqual(["lib/backend/tauri.ts"]);
  });

  it("never renders raw HTML", () => {
    const raw = all
      .filter((f) => f.endsWith(".svelte") && /\{@html\b/.test(readFileSync(f, "utf8")))
      .map((f) => relative(SRC, f));
    expect(raw).toEqual([]);
    const dom = all
      .filter((f) => /\.(innerHTML|outerHTML)\s*=|insertAdjacentHTML\(/.test(readFileSync(f, "utf8")))
      .map((f) => relative(SRC, f));
    expect(dom).toEqual([]);
  });

  it("uses marked only to tokenize, in the markdown module", () => {
    const users = all.filter((f) => /from\s+["']marked["']/.test(readFileSync(f, "utf8"))).map((f) => relative(SRC, f));
    expect(users).toEqual(["lib/markdown/markdown.ts"]);
    const source = readFileSync(join(SRC, "lib/markdown/markdown.ts"), "utf8");
    // Its HTML renderer is never called: marked(...), marked.parse, parseInline, Renderer.
    expect(source).not.toMatch(/marked\s*\(|\.parse\(|parseInline|Renderer|\.use\(/);
  });

  it("puts no inline style attribute in markup (the CSP forbids it)", () => {
    const inline = all
      .filter((f) => f.endsWith(".svelte") && /<[a-zA-Z][^>]*\sstyle="/.test(readFileSync(f, "utf8")))
      .map((f) => relative(SRC, f));
    expect(inline).toEqual([]);
  });
});
