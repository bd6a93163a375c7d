import { describe, expect, it } from "vitest";
import { render } from "svelte/server";
import Markdown from "../../components/markdown/Markdown.svelte";
import { decodeEntities, inlineText, MAX_DEPTH, parseMarkdown, type Block } from "./markdown";

/** Every string a view tree holds, in order. */
function texts(blocks: Block[]): string[] {
  return blocks.flatMap((b): string[] => {
    switch (b.t) {
      case "heading":
      case "paragraph":
        return [inlineText(b.children)];
      case "list":
        return b.items.flatMap((i) => texts(i.blocks));
      default:
        return [b.text];
    }
  });
}

describe("markdown to view nodes", () => {
  it("maps headings, paragraphs, emphasis, inline code and code blocks", () => {
    const md = "# Plan\n\nSome **bold _and em_** text with `code()`.\n\n```rust\nfn main() {}\n```\n";
    expect(parseMarkdown(md)).toEqual([
      { t: "heading", level: 1, children: [{ t: "text", text: "Plan" }] },
      {
        t: "paragraph",
        tight: false,
        children: [
          { t: "text", text: "Some " },
          { t: "strong", children: [{ t: "text", text: "bold " }, { t: "em", children: [{ t: "text", text: "and em" }] }] },
          { t: "text", text: " text with " },
          { t: "code", text: "code()" },
          { t: "text", text: "." },
        ],
      },
      { t: "code", lang: "rust", text: "fn main() {}" },
    ]);
  });

  it("keeps nested lists nested, ordered ones with their start", () => {
    const blocks = parseMarkdown("3. one\n   - a\n   - b\n4. two\n");
    expect(blocks).toHaveLength(1);
    const list = blocks[0]!;
    expect(list.t).toBe("list");
    if (list.t !== "list") return;
    expect(list.ordered).toBe(true);
    expect(list.start).toBe(3);
    expect(list.items).toHaveLength(2);
    const first = list.items[0]!.blocks;
    expect(first[0]).toEqual({ t: "paragraph", tight: true, children: [{ t: "text", text: "one" }] });
    expect(first[1]).toMatchObject({ t: "list", ordered: false, start: null });
    expect(texts(first)).toEqual(["one", "a", "b"]);
  });

  it("shows task boxes as text", () => {
    expect(texts(parseMarkdown("- [x] done\n- [ ] to do\n"))).toEqual(["[x] done", "[ ] to do"]);
  });

  it("keeps raw HTML as literal text, block and inline", () => {
    const blocks = parseMarkdown("<img src=x onerror=alert(1)>\n\nHi <b onclick=alert(1)>there</b>\n");
    expect(blocks[0]).toEqual({ t: "plain", text: "<img src=x onerror=alert(1)>" });
    expect(blocks[1]).toEqual({
      t: "paragraph",
      tight: false,
      children: [{ t: "text", text: "Hi <b onclick=alert(1)>there</b>" }],
    });
  });

  it("makes a link its text and its URL, whatever the scheme", () => {
    expect(parseMarkdown("[x](javascript:alert(1)) and <https://example.com>")).toEqual([
      {
        t: "paragraph",
        tight: false,
        children: [
          { t: "link", children: [{ t: "text", text: "x" }], url: "javascript:alert(1)" },
          { t: "text", text: " and " },
          { t: "link", children: [{ t: "text", text: "https://example.com" }], url: "https://example.com" },
        ],
      },
    ]);
  });

  it("shows images, quotes, tables and rules as their source", () => {
    expect(parseMarkdown("![a](http://x/y.png)")).toEqual([
      { t: "paragraph", tight: false, children: [{ t: "text", text: "![a](http://x/y.png)" }] },
    ]);
    expect(parseMarkdown("> quoted <script>x</script>")).toEqual([{ t: "plain", text: "> quoted <script>x</script>" }]);
    expect(parseMarkdown("| a | b |\n|---|---|\n| 1 | 2 |")).toEqual([{ t: "plain", text: "| a | b |\n|---|---|\n| 1 | 2 |" }]);
    expect(parseMarkdown("---")).toEqual([{ t: "plain", text: "---" }]);
  });

  it("decodes character references into text", () => {
    expect(decodeEntities("a &amp; b &lt;i&gt; &#65;&#x42; &bogus; &#0;")).toBe("a & b <i> AB &bogus; \ufffd");
    expect(texts(parseMarkdown("Tom &amp; Jerry"))).toEqual(["Tom & Jerry"]);
  });

  it("stops nesting at a depth limit, showing the rest as text", () => {
    const deep = Array.from({ length: 40 }, (_, i) => `${"  ".repeat(i)}- level ${i}`).join("\n");
    let depth = 0;
    let blocks = parseMarkdown(deep);
    for (;;) {
      const list = blocks.find((b) => b.t === "list");
      if (!list || list.t !== "list") break;
      depth++;
      blocks = list.items[0]!.blocks;
    }
    expect(depth).toBeLessThanOrEqual(MAX_DEPTH);
    expect(texts(blocks).join("\n")).toContain("level 39");
  });
});

describe("the Markdown component", () => {
  // Without the hydration markers.
  const html = (text: string) => render(Markdown, { props: { text } }).body.replace(/<!--[\s\S]*?-->/g, "");

  it("renders the elements of the view, never the agent's markup", () => {
    const out = html(
      "# Plan\n\n<img src=x onerror=alert(1)>\n\n1. Edit [the docs](javascript:alert(1))\n   - `<script>alert(1)</script>`\n\n<script>alert(2)</script>\n",
    );
    expect(out).toContain("<h4");
    expect(out).toContain("<ol");
    expect(out).toContain("<ul");
    expect(out).toContain("<code");
    // Only the renderer's own elements and attributes: the agent's markup
    // is text (its "<" escaped), so it never opens a tag.
    const tags = [...out.matchAll(/<([a-z][a-z0-9]*)([^>]*)>/gi)];
    expect(new Set(tags.map((m) => m[1]))).toEqual(new Set(["div", "h4", "p", "ol", "li", "span", "ul", "code"]));
    const attrs = tags.flatMap((m) => [...m[2]!.matchAll(/([a-z-]+)=/gi)].map((a) => a[1]));
    expect(new Set(attrs)).toEqual(new Set(["class", "data-testid", "start"]));
    expect(out).toContain("&lt;img src=x onerror=alert(1)>");
    expect(out).toContain("&lt;script>alert(1)&lt;/script>");
    // The link's target is shown as text, beside its words.
    expect(out).toMatch(/the docs<\/span>\s*<span class="url[^"]*">\(javascript:alert\(1\)\)<\/span>/);
  });

  it("shows an autolink's URL once", () => {
    const out = html("see <https://example.com>");
    expect(out.match(/https:\/\/example\.com/g)).toHaveLength(1);
    expect(out).not.toContain("href");
  });
});
