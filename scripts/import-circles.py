#!/usr/bin/env python3
"""Finds import circles between the Rust files of every crate in the workspace.

A file imports another when it names a path into it: `use crate::a::b::X`,
`crate::a::f()`, `super::x`, `self::x`, or a child module's name. Paths are
resolved to the deepest module that is a file of its own; a file's
`#[cfg(test)]` modules are left out (tests may reach anything). Crates cannot
import each other in a circle (cargo refuses it), so files are compared within
their crate.

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


def strip(text):
    """The code of a file without comments, strings and test modules."""
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r'r#*"(?:.|\n)*?"#*', '""', text)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    text = re.sub(r"'(?:\\.|[^'\\])'", "' '", text)
    # A test module to the end of its braces.
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{", text):
        if m.start() < i:
            continue
        out.append(text[i : m.start()])
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        i = j
    out.append(text[i:])
    return "".join(out)


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


def paths_in(code):
    # A `pub use` hands a name on; it is followed, not drawn (see main).
    code = re.sub(r"\bpub(?:\([^)]*\))?\s+use\s+[^;]+;", "", code)
    for m in re.finditer(r"\buse\s+([^;]+);", code):
        yield from expand(m.group(1))
    body = re.sub(r"\buse\s+[^;]+;", "", code)
    for m in re.finditer(r"\b(?:crate|super|self)(?:::\w+)+", body):
        yield m.group(0)


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


def self_test():
    """The checker finds a circle it is shown, and none where there is none."""
    import contextlib
    import io
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "c", "src")
        os.makedirs(os.path.join(src, "a"))
        open(os.path.join(d, "c", "Cargo.toml"), "w").close()
        files = {
            "lib.rs": "mod a;\nmod b;\npub use a::A;\n",
            "a/mod.rs": "mod inner;\npub struct A;\nuse crate::b::B;\n",
            "a/inner.rs": "use super::A;\n",
            "b.rs": "pub struct B;\n#[cfg(test)]\nmod tests { use crate::a::A; }\n",
        }
        for name, text in files.items():
            with open(os.path.join(src, name), "w") as f:
                f.write(text)
        with contextlib.redirect_stdout(io.StringIO()):
            clean = main_on(d)
        with open(os.path.join(src, "b.rs"), "a") as f:
            f.write("fn f() { crate::A; }\n")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            found = main_on(d)
    assert clean == 0, "a test module's import is no arrow; a re-export is followed"
    assert found == 1 and "b.rs -> " in out.getvalue(), out.getvalue()
    print("self-test: a circle is found, none is invented")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return 0
    return main_on(sys.argv[1] if len(sys.argv) > 1 else ".")


def main_on(root):
    found = 0
    for crate, src, files in crate_files(root):
        mods = {module_of(src, f): f for f in files}
        children = {}
        for m in mods:
            if m:
                children.setdefault(m[:-1], set()).add(m[-1])
        codes = {}
        for m, f in mods.items():
            with open(f, encoding="utf-8") as fh:
                codes[m] = strip(fh.read())
        # What each module hands on (`pub use x::Name`): a path through it to
        # that name is an arrow to where the name comes from.
        reexports = {}
        for m, code in codes.items():
            for u in re.finditer(r"\bpub(?:\([^)]*\))?\s+use\s+([^;]+);", code):
                for p in expand(u.group(1)):
                    t = resolve(p, m, mods, children)
                    if t is not None and t != m:
                        alias = re.search(r"\bas\s+(\w+)$", p.strip())
                        name = alias.group(1) if alias else p.replace(" ", "").split("::")[-1]
                        reexports.setdefault(m, {})[name] = t
        graph, names = {}, {}
        for m, code in codes.items():
            for p in paths_in(code):
                t = resolve(p, m, mods, children)
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
