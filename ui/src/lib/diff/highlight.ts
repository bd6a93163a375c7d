// Syntax highlighting as data: Prism's tokenizer (never its HTML output) turns
// a line into (text, class) pairs that the view renders as text nodes inside
// <span class="tok-...">. Agent-written code therefore never reaches the DOM
// as markup. A few languages only, to keep the bundle small.
import "./prism-manual";
import Prism from "prismjs";
import "prismjs/components/prism-typescript";
import "prismjs/components/prism-rust";
import "prismjs/components/prism-python";
import "prismjs/components/prism-json";
import "prismjs/components/prism-markdown";
import "prismjs/components/prism-bash";
import "prismjs/components/prism-toml";
import "prismjs/components/prism-yaml";

export interface Tok {
  text: string;
  /** "" for plain text, else `tok-<type>` (letters, digits and dashes only). */
  cls: string;
}

const BY_EXTENSION: Record<string, string> = {
  ts: "typescript",
  tsx: "typescript",
  mts: "typescript",
  cts: "typescript",
  js: "javascript",
  jsx: "javascript",
  mjs: "javascript",
  cjs: "javascript",
  svelte: "markup",
  rs: "rust",
  py: "python",
  json: "json",
  css: "css",
  md: "markdown",
  markdown: "markdown",
  sh: "bash",
  bash: "bash",
  zsh: "bash",
  toml: "toml",
  yml: "yaml",
  yaml: "yaml",
  html: "markup",
  htm: "markup",
  xml: "markup",
  svg: "markup",
};

/** The Prism language for a path, or null (shown as plain text). */
export function languageFor(path: string): string | null {
  const name = path.slice(path.lastIndexOf("/") + 1).toLowerCase();
  const dot = name.lastIndexOf(".");
  if (dot < 0) return null;
  const ext = name.slice(dot + 1);
  const lang = BY_EXTENSION[ext];
  return lang && Prism.languages[lang] ? lang : null;
}

/** Longer lines are shown plain: tokenizing them costs more than it helps. */
export const MAX_HIGHLIGHT = 1_000;

const cache = new Map<string, Tok[]>();
const CACHE_MAX = 20_000;

/** The line as tokens whose texts concatenate back to `text` exactly. */
export function tokenize(text: string, lang: string | null): Tok[] {
  if (text === "") return [];
  const grammar = lang ? Prism.languages[lang] : undefined;
  if (!grammar || text.length > MAX_HIGHLIGHT) return [{ text, cls: "" }];
  const key = `${lang}\u0000${text}`;
  const hit = cache.get(key);
  if (hit) return hit;
  const out: Tok[] = [];
  flatten(Prism.tokenize(text, grammar), "", out);
  if (cache.size >= CACHE_MAX) cache.clear();
  cache.set(key, out);
  return out;
}

function flatten(stream: Prism.TokenStream, cls: string, out: Tok[]): void {
  if (typeof stream === "string") {
    push(out, stream, cls);
    return;
  }
  if (Array.isArray(stream)) {
    for (const s of stream) flatten(s, cls, out);
    return;
  }
  flatten(stream.content, className(stream), out);
}

function push(out: Tok[], text: string, cls: string) {
  if (text === "") return;
  const last = out[out.length - 1];
  if (last && last.cls === cls) last.text += text;
  else out.push({ text, cls });
}

/** `tok-<type>`, from Prism's grammar names (never from the text). */
function className(t: Prism.Token): string {
  const alias = Array.isArray(t.alias) ? t.alias[0] : t.alias;
  const name = (TYPES.has(t.type) ? t.type : alias && TYPES.has(alias) ? alias : t.type).replace(/[^a-z0-9-]/gi, "");
  return TYPES.has(name) ? `tok-${name}` : "";
}

/** The token types the theme colours; anything else is plain text. */
const TYPES = new Set([
  "comment",
  "prolog",
  "doctype",
  "string",
  "char",
  "template-string",
  "regex",
  "number",
  "boolean",
  "constant",
  "keyword",
  "builtin",
  "function",
  "class-name",
  "operator",
  "punctuation",
  "property",
  "tag",
  "attr-name",
  "attr-value",
  "selector",
  "variable",
  "title",
  "url",
  "important",
  "lifetime-annotation",
  "macro",
  "decorator",
  "key",
  "atrule",
]);
