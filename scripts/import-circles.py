#!/usr/bin/env python3
"""Finds import circles between the Rust files of every crate in the workspace.

A file imports another when it names a path into it: `use crate::a::b::X`,
`crate::a::f()`, `super::x`, `self::x`, or a child module's name. Paths are
resolved to the deepest module that is a file of its own (`self` and `super`
start from the inline module they are written in); a file's `#[cfg(test)]`
modules are left out, inline or files of their own (tests may reach
anything). Crates cannot import each other in a circle (cargo refuses it), so
files are compared within their crate.

Files are read with a lexer of Rust's tokens (`lex`), in one pass: a path in
a comment, a string or a character literal is no import, and no literal
hides the code after it.

Prints every circle (the files, and who takes what from whom) and exits 1 when
there is one; `make lint` runs it. Usage: scripts/import-circles.py [ROOT]
"""

import os
import re
import sys


def module_of(src, path):
    """The module path (a tuple) of the file `path` under a crate's `src`."""
    rel = os.path.relpath(path, src)[: -len(".rs")].split(os.sep)
    if rel in (["lib"], ["main"]):
        return ()
    if rel[-1] == "mod":
        rel = rel[:-1]
    return tuple(rel)


class LexError(Exception):
    """Text that is no Rust token (an unclosed string or comment, a stray quote)."""

    def __init__(self, message, at):
        super().__init__(message)
        self.at = at


def _ident_start(ch):
    return ch == "_" or ch.isalpha()


def _ident_continue(ch):
    return ch == "_" or ch.isalnum()


def lex(text):
    r"""The tokens of a Rust file, in one pass over Rust's lexical grammar.

    Each token is (kind, text): "ident" (keywords too), "raw" (`r#type`, its
    text without the `r#`), "lifetime" (`'a`, `'static`, a label `'outer`),
    "str" (every string: "..", r"..", r#".."#, b"..", br"..", c"..", cr"..",
    with any suffix), "char" ('x', '\n', '\u{1F600}', b'x'), "num", and
    "punct" (`::` as one token, anything else one character). Comments (line,
    doc, and block comments, which nest) are left out. A literal's prefix
    counts only as a whole word: in `bar"x"` (inside a string, say) `bar` is
    no `r`, and a string is a string to its unescaped closing quote.
    """
    toks, n = [], len(text)
    i = 1 if text.startswith("\ufeff") else 0
    if text.startswith("#!", i) and not text[i + 2 :].lstrip().startswith("["):
        # A shebang line (`#![...]` is an inner attribute instead).
        i = text.find("\n", i)
        i = n if i < 0 else i

    def quoted(j, quote):
        """The end of a literal whose body starts at j (escapes allowed)."""
        start = j
        while j < n:
            if text[j] == "\\":
                j += 2
            elif text[j] == quote:
                return j + 1
            else:
                j += 1
        raise LexError("unclosed " + ("string" if quote == '"' else "character literal"), start - 1)

    def suffix(j):
        """A literal's suffix (`1u8`, `"x"s`) belongs to it."""
        if j < n and _ident_start(text[j]):
            while j < n and _ident_continue(text[j]):
                j += 1
        return j

    def char_or_lifetime(i):
        """At a `'`: a character literal, or a lifetime or label."""
        if text.startswith("\\", i + 1):
            return "char", suffix(quoted(i + 1, "'"))
        if i + 2 < n and text[i + 2] == "'" and text[i + 1] != "\n":
            return "char", suffix(i + 3)
        j = i + 1
        if text.startswith("r#", j) and j + 2 < n and _ident_start(text[j + 2]):
            j += 2  # a raw lifetime, 'r#a
        if j < n and _ident_start(text[j]):
            while j < n and _ident_continue(text[j]):
                j += 1
            return "lifetime", j
        raise LexError("a quote that starts neither a character nor a lifetime", i)

    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
        elif text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
        elif text.startswith("/*", i):
            depth, j = 0, i
            while True:
                if j >= n:
                    raise LexError("unclosed block comment", i)
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                    if depth == 0:
                        break
                else:
                    j += 1
            i = j
        elif ch == '"':
            j = suffix(quoted(i + 1, '"'))
            toks.append(("str", text[i:j]))
            i = j
        elif ch == "'":
            kind, j = char_or_lifetime(i)
            toks.append((kind, text[i:j]))
            i = j
        elif _ident_start(ch):
            j = i + 1
            while j < n and _ident_continue(text[j]):
                j += 1
            word, nxt = text[i:j], text[j : j + 1]
            if word in ("r", "br", "cr") and nxt in ('"', "#"):
                k = j
                while k < n and text[k] == "#":
                    k += 1
                if k < n and text[k] == '"':
                    # A raw string: no escapes, closed by `"` and as many `#`.
                    close = '"' + "#" * (k - j)
                    end = text.find(close, k + 1)
                    if end < 0:
                        raise LexError("unclosed raw string", i)
                    end = suffix(end + len(close))
                    toks.append(("str", text[i:end]))
                    i = end
                    continue
            if word == "r" and nxt == "#" and j + 1 < n and _ident_start(text[j + 1]):
                k = j + 1
                while k < n and _ident_continue(text[k]):
                    k += 1
                toks.append(("raw", text[j + 1 : k]))
                i = k
            elif word in ("b", "c") and nxt == '"':
                end = suffix(quoted(j + 1, '"'))
                toks.append(("str", text[i:end]))
                i = end
            elif word == "b" and nxt == "'":
                kind, end = char_or_lifetime(j)
                if kind != "char":
                    raise LexError("b' starts no byte literal", i)
                toks.append(("char", text[i:end]))
                i = end
            else:
                toks.append(("ident", word))
                i = j
        elif ch.isdigit():
            j = i + 1
            radix = text[i : i + 2] in ("0x", "0o", "0b")
            while j < n:
                c = text[j]
                if c in "eE" and not radix and text[j + 1 : j + 2] in ("+", "-"):
                    j += 2
                elif _ident_continue(c):
                    j += 1
                elif c == "." and text[j + 1 : j + 2].isdigit() and not radix:
                    j += 1
                else:
                    break
            toks.append(("num", text[i:j]))
            i = j
        elif text.startswith("::", i):
            toks.append(("punct", "::"))
            i += 2
        else:
            toks.append(("punct", ch))
            i += 1
    return toks


def _is(tok, kind, text):
    return tok[0] == kind and tok[1] == text


def _close(toks, i, open_, close):
    """The index just past the bracket that closes toks[i] (an `open_`)."""
    depth = 0
    for j in range(i, len(toks)):
        if toks[j] == ("punct", open_):
            depth += 1
        elif toks[j] == ("punct", close):
            depth -= 1
            if depth == 0:
                return j + 1
    return len(toks)


CFG_TEST = [("punct", "#"), ("punct", "["), ("ident", "cfg"), ("punct", "("),
            ("ident", "test"), ("punct", ")"), ("punct", "]")]


def without_tests(toks):
    """The tokens without `#[cfg(test)]` modules, and the names of those that
    are files of their own (`#[cfg(test)] mod tests;`)."""
    out, test_files, i = [], set(), 0
    while i < len(toks):
        if toks[i : i + len(CFG_TEST)] == CFG_TEST:
            j = i + len(CFG_TEST)
            while j + 1 < len(toks) and toks[j] == ("punct", "#") and toks[j + 1] == ("punct", "["):
                j = _close(toks, j + 1, "[", "]")  # more attributes on the same item
            if j < len(toks) and _is(toks[j], "ident", "pub"):
                j += 1
                if j < len(toks) and toks[j] == ("punct", "("):
                    j = _close(toks, j, "(", ")")
            if j + 2 < len(toks) and _is(toks[j], "ident", "mod") and toks[j + 1][0] in ("ident", "raw"):
                if toks[j + 2] == ("punct", "{"):
                    i = _close(toks, j + 2, "{", "}")
                    continue
                if toks[j + 2] == ("punct", ";"):
                    test_files.add(toks[j + 1][1])
                    i = j + 3
                    continue
        out.append(toks[i])
        i += 1
    return out, test_files


def _tree_text(toks):
    """A use tree's tokens as text: `a::{b, c as d}` -> "a::{b,c as d}"."""
    out, word = "", False
    for kind, text in toks:
        w = kind in ("ident", "raw")
        out += (" " if w and word else "") + text
        word = w
    return out


def parse(text):
    """What a file names, test modules left out: its use trees as (is_pub,
    tree text, scope), the paths its code names outside them (`crate::a::f`,
    `super::x`, `self::y`) as (path, scope), and the names of its test
    modules that are files. A scope is the inline modules (`mod m { .. }`)
    the name is in, which `self` and `super` start from."""
    toks, test_files = without_tests(lex(text))
    uses, paths, i, n = [], [], 0, len(toks)
    scope, opened, level = [], [], 0
    while i < n:
        if _is(toks[i], "ident", "use"):
            j, depth = i + 1, 0
            while j < n and not (depth == 0 and toks[j] == ("punct", ";")):
                depth += {("punct", "{"): 1, ("punct", "}"): -1}.get(toks[j], 0)
                j += 1
            before = i - 1
            if before >= 0 and toks[before] == ("punct", ")"):
                depth = 0  # pub(crate), pub(super), pub(in path)
                while before >= 0:
                    depth += {("punct", ")"): 1, ("punct", "("): -1}.get(toks[before], 0)
                    if depth == 0:
                        break
                    before -= 1
                before -= 1
            is_pub = before >= 0 and _is(toks[before], "ident", "pub")
            uses.append((is_pub, _tree_text(toks[i + 1 : j]), tuple(scope)))
            i = j + 1
        elif toks[i][0] == "ident" and toks[i][1] in ("crate", "super", "self"):
            segs, j = [toks[i][1]], i + 1
            while j + 1 < n and toks[j] == ("punct", "::") and toks[j + 1][0] in ("ident", "raw"):
                segs.append(toks[j + 1][1])
                j += 2
            if len(segs) > 1:
                paths.append(("::".join(segs), tuple(scope)))
            i = j
        elif (
            _is(toks[i], "ident", "mod")
            and i + 2 < n
            and toks[i + 1][0] in ("ident", "raw")
            and toks[i + 2] == ("punct", "{")
        ):
            scope.append(toks[i + 1][1])
            opened.append(level)
            level += 1
            i += 3
        else:
            if toks[i] == ("punct", "{"):
                level += 1
            elif toks[i] == ("punct", "}"):
                level -= 1
                if opened and opened[-1] == level:
                    opened.pop()
                    scope.pop()
            i += 1
    return uses, paths, test_files


def expand(tree):
    """`a::{b, c::{d, e}}` as the paths a::b, a::c::d, a::c::e."""
    tree = tree.strip()
    m = re.match(r"^([\w:]*?)(?:::)?\{(.*)\}$", tree, re.S)
    if not m:
        return [tree]
    head, body = m.group(1), m.group(2)
    parts, depth, cur = [], 0, ""
    for ch in body:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += {"{": 1, "}": -1}.get(ch, 0)
        cur += ch
    parts.append(cur)
    out = []
    for p in parts:
        if p.strip():
            for sub in expand(p):
                out.append(f"{head}::{sub}" if head else sub)
    return out


def resolve(path, here, modules, children):
    path = re.sub(r"\s+as\s+\w+$", "", path.strip())
    segs = [s for s in re.split(r"::", path.replace(" ", "")) if s]
    if not segs:
        return None
    if segs[0] == "crate":
        base, segs = [], segs[1:]
    elif segs[0] in ("super", "self"):
        # In a mod.rs or lib.rs, `self` is the file's own module; in a.rs too.
        base = list(here)
        while segs and segs[0] in ("super", "self"):
            if segs[0] == "super":
                base = base[:-1]
            segs = segs[1:]
    elif segs[0] in children.get(here, ()):
        base = list(here)
    else:
        return None
    target = tuple(base)
    for s in segs:
        if target + (s,) in modules:
            target = target + (s,)
        else:
            break
    while target and target not in modules:
        target = target[:-1]  # `self` in an inline module: its file
    return target


def crate_files(root):
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in ("target", "node_modules", ".git")]
        if "Cargo.toml" in files and os.path.isdir(os.path.join(dirpath, "src")):
            src = os.path.join(dirpath, "src")
            found = []
            for d, _, fs in os.walk(src):
                found += [os.path.join(d, f) for f in fs if f.endswith(".rs")]
            yield dirpath, src, sorted(found)


def circles(graph):
    """Strongly connected components with more than one file (Tarjan)."""
    index, low, on, stack, out, n = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


# Code that fooled the regexes this script read Rust with before its lexer:
# each is b.rs of a crate whose a.rs calls `crate::b::g()` (or the crate's
# files, when they are more), so whether b names a (a circle) rests on
# reading the code right; True: it does.
FOOLERS = [
    (
        "a `//` in a string is no comment (the old check saw no circle)",
        'pub fn g() { let u = "http://x"; crate::a::f(); }\n',
        True,
    ),
    (
        "a `/*` in a string opens no comment (the old check saw no circle)",
        'pub fn g() { let s = "/*"; crate::a::f(); let t = "*/"; }\n',
        True,
    ),
    (
        "a string ending in r is no raw string (the old check saw no circle)",
        'pub fn g() { let s = "bar"; crate::a::f(); let t = "baz"; }\n',
        True,
    ),
    (
        "a quote in a character is no string (the old check saw no circle)",
        "pub fn g() { let q = ['\"', '\\\"']; crate::a::f(); let s = \"x\"; }\n",
        True,
    ),
    (
        "block comments nest (the old check invented a circle)",
        "/* outer /* inner */ crate::a::f(); */\n"
        "/** doc /* inner */ crate::a::f() */\n/// crate::a::f()\npub fn g() {}\n",
        False,
    ),
    (
        "a raw string ends at its quote and hashes (the old check invented a circle)",
        'pub fn g() {}\npub const S: &str = r#"one " crate::a::f() "#;\n'
        'pub const T: &[u8] = br##"two "# crate::a::f() "##;\n',
        False,
    ),
    (
        "byte, C and raw strings, raw identifiers (the old check invented a circle)",
        'pub fn g() {\n    let r#type = c"x\\" crate::a::f() \\"";\n'
        '    let _ = (r#type, cr#"" crate::a::f()"#, b"\\"", b\'"\');\n}\n',
        False,
    ),
    (
        "a test module with more attributes, braces in its literals (the old check invented a circle)",
        "pub fn g() {}\n#[cfg(test)]\n#[allow(unused)]\nmod tests {\n"
        "    const S: &str = \"}\";\n    const C: char = '}';\n    /* } */\n"
        "    use crate::a::f;\n}\n",
        False,
    ),
    (
        "lifetimes, labels and characters (a lifetime read as a character would hide the call)",
        "pub struct W<'a>(&'a str);\n"
        "pub fn g<'a, 'b: 'a>(x: &'a str, _y: &'b str) -> &'a str {\n"
        "    let _c = ['a', '\\n', '\\'', '\\u{1F600}', b'x' as char, '😀'];\n"
        "    'outer: loop {\n        break 'outer;\n    }\n"
        "    crate::a::f();\n    let _s: &'static str = \"x\";\n    x\n}\n",
        True,
    ),    (
        "`super` in an inline module is its file (the old check saw no circle)",
        {
            "a.rs": "pub struct A;\npub fn f() { crate::b::g(); }\n"
            "pub mod inner {\n    pub use super::A;\n}\n",
            "b.rs": "use crate::a::inner::A;\npub fn g() {}\n",
        },
        True,
    ),
]

# What the lexer makes of a piece of code, token by token.
LEXED = [
    ("'a' 'a '\\u{1F600}' '\\'' b'\\\\' 'static 'r#a",
     [("char", "'a'"), ("lifetime", "'a"), ("char", "'\\u{1F600}'"), ("char", "'\\''"),
      ("char", "b'\\\\'"), ("lifetime", "'static"), ("lifetime", "'r#a")]),
    ('r"a\\" b"c\\"" r#"x"y"# br##"#"##x',
     [("str", 'r"a\\"'), ("str", 'b"c\\""'), ("str", 'r#"x"y"#'), ("str", 'br##"#"##x')]),
    ('bar"x" r#type c"y" cr"z" br b',
     [("ident", "bar"), ("str", '"x"'), ("raw", "type"), ("str", 'c"y"'), ("str", 'cr"z"'),
      ("ident", "br"), ("ident", "b")]),
    ("a /* /* */ */ b // c\n/// d\n//! e\n/** f */ crate::x 1.5e-3 0x1E",
     [("ident", "a"), ("ident", "b"), ("ident", "crate"), ("punct", "::"), ("ident", "x"),
      ("num", "1.5e-3"), ("num", "0x1E")]),
]


def run_on(files):
    """The checker run on one crate of `files`: its exit code and output."""
    import contextlib
    import io
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "c", "src")
        os.makedirs(src)
        open(os.path.join(d, "c", "Cargo.toml"), "w").close()
        for name, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(src, name)), exist_ok=True)
            with open(os.path.join(src, name), "w", encoding="utf-8") as f:
                f.write(text)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main_on(d)
    return code, out.getvalue()


def self_test():
    """The checker finds a circle it is shown, and none where there is none."""
    files = {
        "lib.rs": "mod a;\nmod b;\npub use a::A;\n",
        "a/mod.rs": "mod inner;\npub struct A;\nuse crate::b::B;\n",
        "a/inner.rs": "use super::A;\n",
        "b.rs": "pub struct B;\n#[cfg(test)]\nmod tests { use crate::a::A; }\n",
    }
    clean, _ = run_on(files)
    files["b.rs"] += "fn f() { crate::A; }\n"
    found, out = run_on(files)
    assert clean == 0, "a test module's import is no arrow; a re-export is followed"
    assert found == 1 and "b.rs -> " in out, out
    for code, want in LEXED:
        got = lex(code)
        assert got == want, f"{code!r}: {got} (want {want})"
    for what, b, circle in FOOLERS:
        files = {"lib.rs": "mod a;\nmod b;\n", "a.rs": "pub fn f() { crate::b::g(); }\n"}
        files.update({"b.rs": b} if isinstance(b, str) else b)
        code, out = run_on(files)
        assert code == (1 if circle else 0), f"{what}: {out}"
    print(f"self-test: a circle is found, none is invented ({len(FOOLERS)} cases that fooled regexes)")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return 0
    return main_on(sys.argv[1] if len(sys.argv) > 1 else ".")


def main_on(root):
    found = 0
    for crate, src, files in crate_files(root):
        mods = {module_of(src, f): f for f in files}
        parsed, tests = {}, set()
        for m, f in mods.items():
            with open(f, encoding="utf-8") as fh:
                text = fh.read()
            try:
                parsed[m] = parse(text)
            except LexError as e:
                line = text.count("\n", 0, e.at) + 1
                print(f"{os.path.relpath(f, root)}:{line}: cannot read as Rust: {e}")
                return 2
            tests |= {m + (t,) for t in parsed[m][2]}
        # A test module that is a file is left out, with the files under it.
        mods = {m: f for m, f in mods.items() if not any(m[: len(t)] == t for t in tests)}
        children = {}
        for m in mods:
            if m:
                children.setdefault(m[:-1], set()).add(m[-1])
        # What each module hands on (`pub use x::Name`): a path through it to
        # that name is an arrow to where the name comes from.
        reexports = {}
        for m in mods:
            for is_pub, tree, scope in parsed[m][0]:
                if not is_pub:
                    continue
                for p in expand(tree):
                    t = resolve(p, m + scope, mods, children)
                    if t is not None and t != m:
                        alias = re.search(r"\bas\s+(\w+)$", p.strip())
                        name = alias.group(1) if alias else p.replace(" ", "").split("::")[-1]
                        reexports.setdefault(m, {})[name] = t
        graph, names = {}, {}
        for m in mods:
            uses, body, _ = parsed[m]
            # A `pub use` hands a name on; it is followed (above), not drawn.
            named = [(p, sc) for is_pub, tree, sc in uses if not is_pub for p in expand(tree)] + body
            for p, scope in named:
                t = resolve(p, m + scope, mods, children)
                last = p.replace(" ", "").split("::")[-1]
                seen = set()
                while t is not None and last in reexports.get(t, {}) and t not in seen:
                    seen.add(t)
                    t = reexports[t][last]
                if t is None or t == m:
                    continue
                graph.setdefault(m, set()).add(t)
                names.setdefault((m, t), set()).add(last)
        for comp in circles(graph):
            found += 1
            files_of = [os.path.relpath(mods[c], root) for c in comp]
            print(f"circle in {os.path.relpath(crate, root)}: {len(comp)} files")
            for f in files_of:
                print(f"  {f}")
            inside = set(comp)
            for a in comp:
                for b in sorted(graph.get(a, ())):
                    if b in inside:
                        taken = ", ".join(sorted(names[(a, b)])[:6])
                        print(f"    {os.path.relpath(mods[a], root)} -> {os.path.relpath(mods[b], root)}: {taken}")
    if found:
        print(f"{found} import circle(s): make one side stop importing the other (move what both need below them)")
        return 1
    print("no import circles")
    return 0


if __name__ == "__main__":
    sys.exit(main())
