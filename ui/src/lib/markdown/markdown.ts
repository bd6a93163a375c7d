// Untrusted markdown (an agent's own words for its plan) as a small tree of
// view nodes that ../../components/markdown/Markdown.svelte renders as
// Svelte elements. Never HTML: `marked` only tokenizes (its lexer, never its
// renderer); raw HTML comes out as literal text, links as text with their URL
// shown and nothing to click, images as their source text. Pure.
import { marked, type Token, type Tokens } from "marked";

export type Inline =
  | { t: "text"; text: string }
  | { t: "strong"; children: Inline[] }
  | { t: "em"; children: Inline[] }
  | { t: "code"; text: string }
  /** A link: its text, and its target shown as text (never an href). */
  | { t: "link"; children: Inline[]; url: string }
  | { t: "br" };

export interface ListItem {
  blocks: Block[];
}

export type Block =
  | { t: "heading"; level: 1 | 2 | 3 | 4 | 5 | 6; children: Inline[] }
  /** `tight`: a tight list item's text (no paragraph spacing). */
  | { t: "paragraph"; children: Inline[]; tight: boolean }
  | { t: "list"; ordered: boolean; start: number | null; items: ListItem[] }
  | { t: "code"; lang: string | null; text: string }
  /** Anything else (HTML, tables, quotes, rules...): its source, as text. */
  | { t: "plain"; text: string };

/** Nesting deeper than this is shown as its source text: hostile input
 * cannot make the page recurse without end. */
export const MAX_DEPTH = 8;

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: "\u00a0" };

/** Decodes the few character references markdown text carries (the result
 * is only ever shown as text). */
export function decodeEntities(s: string): string {
  if (!s.includes("&")) return s;
  return s.replace(/&(#x[0-9a-f]{1,6}|#[0-9]{1,7}|[a-z]{2,6});/gi, (m, name: string) => {
    if (name.startsWith("#")) {
      const code = name[1] === "x" || name[1] === "X" ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10);
      return code > 0 && code <= 0x10ffff && (code < 0xd800 || code > 0xdfff) ? String.fromCodePoint(code) : "\ufffd";
    }
    return ENTITIES[name.toLowerCase()] ?? m;
  });
}

/** The agent's markdown as view blocks. */
export function parseMarkdown(text: string): Block[] {
  let tokens: Token[];
  try {
    tokens = marked.lexer(text, { gfm: true, breaks: false, async: false });
  } catch {
    return text.trim() ? [{ t: "plain", text }] : [];
  }
  return blocksOf(tokens, 0);
}

export function blocksOf(tokens: readonly Token[], depth: number): Block[] {
  const out: Block[] = [];
  for (const tok of tokens) {
    const b = blockOf(tok, depth);
    if (b) out.push(b);
  }
  return out;
}

function plain(tok: Token): Block | null {
  const text = tok.raw.replace(/\n+$/, "");
  return text.trim() ? { t: "plain", text } : null;
}

function blockOf(tok: Token, depth: number): Block | null {
  if (depth >= MAX_DEPTH) return plain(tok);
  switch (tok.type) {
    case "space":
      return null;
    case "heading": {
      const h = tok as Tokens.Heading;
      const level = Math.min(6, Math.max(1, h.depth)) as 1 | 2 | 3 | 4 | 5 | 6;
      return { t: "heading", level, children: inlinesOf(h.tokens, depth + 1) };
    }
    case "paragraph":
      return { t: "paragraph", children: inlinesOf((tok as Tokens.Paragraph).tokens, depth + 1), tight: false };
    case "text": {
      // Block-level text: a tight list item's content.
      const tt = tok as Tokens.Text;
      const children = tt.tokens ? inlinesOf(tt.tokens, depth + 1) : [{ t: "text" as const, text: decodeEntities(tt.text) }];
      return { t: "paragraph", children, tight: true };
    }
    case "list": {
      const l = tok as Tokens.List;
      const start = typeof l.start === "number" && Number.isFinite(l.start) ? l.start : null;
      return {
        t: "list",
        ordered: l.ordered,
        start: l.ordered ? start : null,
        items: l.items.map((item) => ({ blocks: itemBlocks(item, depth + 1) })),
      };
    }
    case "code": {
      const c = tok as Tokens.Code;
      const lang = c.lang?.trim().split(/\s+/)[0] ?? "";
      return { t: "code", lang: lang === "" ? null : lang, text: c.text };
    }
    default:
      // html (as literal text), blockquote, table, hr, def and whatever
      // else: the source the agent wrote.
      return plain(tok);
  }
}

function itemBlocks(item: Tokens.ListItem, depth: number): Block[] {
  const blocks: Block[] = [];
  let box: string | null = null;
  for (const tok of item.tokens) {
    if (tok.type === "checkbox") {
      box = (tok as Tokens.Checkbox).checked ? "[x] " : "[ ] ";
      continue;
    }
    const b = blockOf(tok, depth);
    if (b) blocks.push(b);
  }
  if (box === null && item.task) box = item.checked ? "[x] " : "[ ] ";
  if (box !== null) {
    const first = blocks[0];
    if (first && (first.t === "paragraph" || first.t === "heading")) first.children.unshift({ t: "text", text: box });
    else blocks.unshift({ t: "paragraph", children: [{ t: "text", text: box.trim() }], tight: true });
  }
  return blocks;
}

export function inlinesOf(tokens: readonly Token[] | undefined, depth: number): Inline[] {
  const out: Inline[] = [];
  const push = (n: Inline) => {
    const last = out[out.length - 1];
    // Adjacent text merges: fewer nodes, and a search finds the words.
    if (n.t === "text" && last?.t === "text") last.text += n.text;
    else out.push(n);
  };
  for (const tok of tokens ?? []) {
    if (depth >= MAX_DEPTH) {
      push({ t: "text", text: tok.raw });
      continue;
    }
    switch (tok.type) {
      case "text": {
        const tt = tok as Tokens.Text;
        if (tt.tokens) for (const n of inlinesOf(tt.tokens, depth + 1)) push(n);
        else push({ t: "text", text: decodeEntities(tt.text) });
        break;
      }
      case "escape":
        push({ t: "text", text: (tok as Tokens.Escape).text });
        break;
      case "strong":
        out.push({ t: "strong", children: inlinesOf((tok as Tokens.Strong).tokens, depth + 1) });
        break;
      case "em":
        out.push({ t: "em", children: inlinesOf((tok as Tokens.Em).tokens, depth + 1) });
        break;
      case "codespan":
        out.push({ t: "code", text: (tok as Tokens.Codespan).text });
        break;
      case "br":
        out.push({ t: "br" });
        break;
      case "del":
        // Shown as its words.
        for (const n of inlinesOf((tok as Tokens.Del).tokens, depth + 1)) push(n);
        break;
      case "link": {
        const l = tok as Tokens.Link;
        out.push({ t: "link", children: inlinesOf(l.tokens, depth + 1), url: l.href });
        break;
      }
      default:
        // html (literal), image (its source), checkbox and the rest.
        push({ t: "text", text: tok.raw });
    }
  }
  return out;
}

/** The words of inline nodes, for a link whose text is its own URL. */
export function inlineText(nodes: readonly Inline[]): string {
  return nodes
    .map((n) => (n.t === "text" || n.t === "code" ? n.text : n.t === "br" ? "\n" : n.t === "link" ? inlineText(n.children) : inlineText(n.children)))
    .join("");
}

/** Whether a link's text already says where it goes (autolinks): then the
 * URL is shown once. */
export function showsOwnUrl(link: { children: Inline[]; url: string }): boolean {
  const text = inlineText(link.children).trim();
  return text === link.url || `http://${text}` === link.url || `mailto:${text}` === link.url;
}
