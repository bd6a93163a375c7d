import { describe, expect, it } from "vitest";
import { languageFor, MAX_HIGHLIGHT, tokenize } from "./highlight";

const join = (t: { text: string }[]) => t.map((x) => x.text).join("");

describe("languageFor", () => {
  it("maps extensions to the few languages we load", () => {
    expect(languageFor("src/a.ts")).toBe("typescript");
    expect(languageFor("src/App.TSX")).toBe("typescript");
    expect(languageFor("crates/x/src/lib.rs")).toBe("rust");
    expect(languageFor("tool.py")).toBe("python");
    expect(languageFor("package.json")).toBe("json");
    expect(languageFor("app.css")).toBe("css");
    expect(languageFor("README.md")).toBe("markdown");
    expect(languageFor("run.sh")).toBe("bash");
    expect(languageFor("index.mjs")).toBe("javascript");
  });

  it("shows unknown files as plain text", () => {
    expect(languageFor("Makefile")).toBeNull();
    expect(languageFor("notes.txt")).toBeNull();
    expect(languageFor(".env")).toBeNull();
    expect(languageFor("dir.ts/file")).toBeNull();
  });
});

describe("tokenize", () => {
  it("returns tokens whose texts give back the line exactly", () => {
    for (const [line, lang] of [
      ['const x: number = 42; // "answer"', "typescript"],
      ["fn main() { println!(\"hi {}\", 'a'); }", "rust"],
      ["def f(x):  return x ** 2  # square", "python"],
      ['{"a": [1, true, null]}', "json"],
      ["# Title with `code`", "markdown"],
      ['echo "$HOME" | grep -v x', "bash"],
    ] as const) {
      expect(join(tokenize(line, lang))).toBe(line);
    }
  });

  it("classifies keywords, strings, numbers and comments", () => {
    const toks = tokenize('const s = "hi"; // note', "typescript");
    expect(toks).toContainEqual({ text: "const", cls: "tok-keyword" });
    expect(toks).toContainEqual({ text: '"hi"', cls: "tok-string" });
    expect(toks).toContainEqual({ text: "// note", cls: "tok-comment" });
    expect(tokenize("let n = 7;", "rust")).toContainEqual({ text: "7", cls: "tok-number" });
  });

  it("keeps markup in code as text: no token is ever HTML", () => {
    const line = 'el.innerHTML = "<img src=x onerror=alert(1)>";';
    const toks = tokenize(line, "javascript");
    expect(join(toks)).toBe(line);
    expect(toks.some((t) => t.text.includes("<img src=x onerror=alert(1)>"))).toBe(true);
    for (const t of toks) expect(t.cls).toMatch(/^(tok-[a-z0-9-]+)?$/);
  });

  it("leaves plain text and very long lines unhighlighted", () => {
    expect(tokenize("just words", null)).toEqual([{ text: "just words", cls: "" }]);
    const long = "x".repeat(MAX_HIGHLIGHT + 1);
    expect(tokenize(long, "typescript")).toEqual([{ text: long, cls: "" }]);
    expect(tokenize("", "typescript")).toEqual([]);
  });
});
