"""Which extension modules `import X` loads: a static import graph read from the Python files.

Nothing is executed: module files are read as text and their import statements found by
line. A full `ast` parse would be exact but costs about 0.3 s per MB of source (torch's import
closure alone is ~25 MB); the line scanner below reads the same closure in well under a second.
It keeps what matters for loading: imports that run when the module runs (module level, `if`,
`with` and class bodies), not those inside functions or under `if TYPE_CHECKING:`; imports
inside a `try:` whose handler does not re-raise are optional (their failure is swallowed).
Dynamic imports (`importlib.import_module`, module `__getattr__`) are not seen.
"""

from __future__ import annotations

import enum
import os
import re
import stat as stat_module
from dataclasses import dataclass, field

from ldscope.elf import open_regular
from ldscope.system._import_cache import ImportCache, scanner_fingerprint

# The lines that open or close blocks, and the import statements. Other lines are skipped.
_LINE = re.compile(
    r"^(?:([ \t]*)(?:(async[ \t]+def|def|class|try|except|finally|else|elif|if|with|for|while|raise)\b(.*)"
    r"|(from[ \t]+[.\w]+[ \t]+import[ \t]*(?:\((?:[^)#]|#[^\n]*)*\)|[^\n#;\\]*(?:\\\n[^\n#;\\]*)*)"
    r"|import[ \t]+[^\n#;\\]+(?:\\\n[^\n#;\\]*)*))"
    r"|(?=[^\s#)\]}]))",  # (a line at column 0 that closes a bracket continues a statement)
    re.M,
)
_FROM = re.compile(r"from\s+([.\w]+)\s+import\s*\(?([^)#;]*)\)?", re.S)
_OPENS_BLOCK = re.compile(r":[ \t]*(?:#[^\n]*)?$", re.M)
_TYPE_CHECKING = re.compile(r"^\s*(?:typing\.)?TYPE_CHECKING\s*:")
_NAME = re.compile(r"[A-Za-z_]\w*")
_COMMENT = re.compile(r"#[^\n]*")
_DOCSTRING = re.compile(r"(?:[ \t]*(?:#[^\n]*)?\n)*[ \t]*[rRuU]?(\"\"\"|''').*?\1", re.S)
_MAX_SOURCE = 4 << 20  # a module bigger than this is generated data, not imports


@dataclass(frozen=True, slots=True)
class ModuleFile:
    """Where a dotted module name resolved: a package, a source module or an extension."""

    name: str
    path: str  # __init__.py, module.py, the extension file, or the namespace package directory
    is_package: bool
    is_extension: bool


@dataclass(frozen=True, slots=True)
class ImportClosure:
    """The extension files an import loads, in load order; `required`: their failure fails it."""

    required: tuple[str, ...]
    optional: tuple[str, ...]

    @property
    def all(self) -> tuple[str, ...]:
        """Every extension file the import loads when all of them load."""
        return self.required + tuple(p for p in self.optional if p not in self.required)


class Guard(enum.Enum):
    """What stands between an import statement and its module failing with it."""

    NONE = "none"  # module level: its failure fails the importing module
    CONDITION = "condition"  # under an `if` or in a handler: runs only sometimes
    TRY = "try"  # in a `try:` whose handlers swallow the error: failure survived
    PARENT = "parent"  # a parent package of the module a statement imports (imported first)
    PARENT_TRY = "parent-try"  # the same, of a statement under a swallowing try: failure survived

    # Members are singletons: identity's hash (in C) instead of Enum's hash of the name.
    __hash__ = object.__hash__


@dataclass(slots=True)
class _Block:
    indent: int
    kind: str  # def, skip (TYPE_CHECKING), try, except (the try's handlers), cond, other
    reraises: bool = False  # for a try: one of its handlers raises


_GUARD_OF = {g.value: g for g in Guard}
_SWALLOWED = (Guard.TRY, Guard.PARENT_TRY)


@dataclass(frozen=True, slots=True)
class _Node:
    """One module as the walks see it: an extension's path, or a source module's imports."""

    extension: str | None  # the extension file (no imports)
    children: tuple[str, ...]  # every module its imports run, in order (first pass)
    foreign_try: tuple[str, ...]  # other packages' modules it imports under a swallowing try
    reversed_entries: tuple[tuple[str, bool], ...]  # (module, swallowed by a try), last first


class ImportGraph:
    """The static import graph of the modules under some site-packages directories."""

    def __init__(self, site_packages: tuple[str, ...], extension_suffixes: tuple[str, ...],
                 cache_dir: str | None = None) -> None:
        self.site_packages = site_packages
        self.extension_suffixes = extension_suffixes
        fingerprint = scanner_fingerprint(__file__) if cache_dir else ""
        # One persistent cache per site directory (None: every file is scanned afresh).
        self._caches = [(site.rstrip("/") + "/", ImportCache(cache_dir, site, fingerprint))
                        for site in site_packages] if cache_dir else []
        self._listing: dict[str, frozenset[str]] = {}
        self._resolved: dict[str, ModuleFile | None] = {}
        self._imports: dict[str, tuple[tuple[str, Guard], ...]] = {}
        self._nodes: dict[str, _Node | None] = {}  # dotted name -> its walk facts (None: not found)
        self._states: dict[str, _ImportState] = {}  # dotted prefix -> the process after importing it

    # ----------------------------------------------------------------- resolution
    def _names_in(self, directory: str) -> frozenset[str]:
        names = self._listing.get(directory)
        if names is None:
            try:
                names = frozenset(os.listdir(directory))
            except OSError:
                names = frozenset()
            self._listing[directory] = names
        return names

    def resolve(self, name: str) -> ModuleFile | None:
        """The file a dotted module name is imported from, or None (stdlib, not installed)."""
        if name in self._resolved:
            return self._resolved[name]
        # Parents first, in a loop: a dotted name of 1,000 parts (from a hostile import
        # statement or a package tree that deep) must not recurse 1,000 frames deep.
        parts = name.split(".")
        first = len(parts)
        while first > 1 and ".".join(parts[:first - 1]) not in self._resolved:
            first -= 1
        found: ModuleFile | None = None
        for count in range(first, len(parts) + 1):
            dotted = ".".join(parts[:count])
            if count > 1:
                parent = self._resolved[".".join(parts[:count - 1])]
                dirs = []
                if parent is not None and parent.is_package:
                    dirs = [parent.path if os.path.isdir(parent.path) else os.path.dirname(parent.path)]
            else:
                dirs = list(self.site_packages)
            found = None
            for directory in dirs:
                found = self._find_in(directory, dotted, parts[count - 1])
                if found is not None:
                    break
            self._resolved[dotted] = found
        return found

    def _find_in(self, directory: str, name: str, leaf: str) -> ModuleFile | None:
        names = self._names_in(directory)
        if leaf in names:
            sub = os.path.join(directory, leaf)
            if "__init__.py" in self._names_in(sub):
                return ModuleFile(name, os.path.join(sub, "__init__.py"), True, False)
        # The importer's order: extension suffixes first, then source (FileFinder's loaders).
        for suffix in self.extension_suffixes:
            if leaf + suffix in names:
                return ModuleFile(name, os.path.join(directory, leaf + suffix), False, True)
        if leaf + ".py" in names:
            return ModuleFile(name, os.path.join(directory, leaf + ".py"), False, False)
        if leaf in names and os.path.isdir(os.path.join(directory, leaf)):
            return ModuleFile(name, os.path.join(directory, leaf), True, False)  # namespace package
        return None

    # ----------------------------------------------------------------- statements
    def _imports_of(self, module: ModuleFile) -> tuple[tuple[str, Guard], ...]:
        """(absolute module name, guard) for each import the module runs, in order; `import
        a.b` and `from a.b import c` also run a and a.b, so those come first."""
        cached = self._imports.get(module.path)
        if cached is not None:
            return cached
        result: tuple[tuple[str, Guard], ...] = ()
        if not module.is_extension and module.path.endswith(".py"):
            package = module.name if module.is_package else module.name.rpartition(".")[0]
            result = tuple(self._statements_of(module.path, package))
        self._imports[module.path] = result
        return result

    def _statements_of(self, path: str, package: str) -> list[tuple[str, Guard]]:
        """What the module's import statements run (see `_runs`): from the persistent cache
        when the file is unchanged, else read and scanned (and remembered)."""
        cache = next((c for prefix, c in self._caches if path.startswith(prefix)), None)
        if cache is not None:
            # An unchanged file is not opened: its stat is its cache key (a FIFO is no
            # regular file, never cached, and falls through to open_regular's refusal).
            try:
                st = os.stat(path)
            except OSError:
                return []
            if stat_module.S_ISREG(st.st_mode):
                hit = cache.get(path, st, package)
                if hit is not None:
                    return [(name, _GUARD_OF[guard]) for name, guard in hit if guard in _GUARD_OF]
        try:
            with open_regular(path) as fh:  # a FIFO named x.py is never opened
                stat = os.fstat(fh.fileno())
                if cache is not None:
                    cached = cache.get(path, stat, package)
                    if cached is not None:
                        return [(name, _GUARD_OF[guard]) for name, guard in cached if guard in _GUARD_OF]
                source = fh.read(_MAX_SOURCE).decode("utf-8", "replace")
        except OSError:
            return []
        found = _runs(_scan_imports(source, package))
        if cache is not None:
            cache.put(path, stat, package, [(name, guard.value) for name, guard in found])
        return found

    def save(self) -> None:
        """Write what this graph scanned to the persistent cache (if it has one)."""
        for _, cache in self._caches:
            cache.save()

    def closure(self, name: str) -> ImportClosure:
        """The extension files `import name` loads (its parent packages first), in load order.

        Required: reached by imports that are not guarded, through modules the code never
        imports under a swallowing `try:` anywhere (a package that guards an import of M is
        prepared for M to fail, wherever else it imports M).
        """
        state = self._state_after(name)
        rank = state.first
        required = sorted(state.required, key=rank.__getitem__)  # one reached optionally first loads there
        return ImportClosure(tuple(required), tuple(p for p in dict.fromkeys(state.optional) if p not in state.required))

    def _state_after(self, name: str) -> _ImportState:
        """The process after `import name`: its parent's state, then what running `name` adds.

        Memoised per dotted prefix, and incremental as the importer is: what `import a` loaded
        is in sys.modules when `a.b` runs, so `a.b`'s walk stops there. Every extension of a
        package shares its parents' walks (scipy's 200 extensions walk scipy and numpy once).
        """
        cached = self._states.get(name)
        if cached is not None:
            return cached
        # The uncomputed prefixes, shortest first, in a loop (not recursion: see resolve).
        missing = [name]
        parent = name.rpartition(".")[0]
        while parent and parent not in self._states:
            missing.append(parent)
            parent = parent.rpartition(".")[0]
        st = _ImportState()
        for prefix in reversed(missing):
            above = prefix.rpartition(".")[0]
            st = self._state_of(prefix, self._states[above].copy() if above else _ImportState())
        return st

    def _node(self, name: str) -> _Node | None:
        """The walk facts of a dotted module name, computed once (None: not found)."""
        if name in self._nodes:
            return self._nodes[name]
        module = self.resolve(name)
        node: _Node | None = None
        if module is not None:
            if module.is_extension:
                node = _Node(module.path, (), (), ())
            else:
                imports = self._imports_of(module)
                top = name.partition(".")[0]
                node = _Node(None, tuple([child for child, _ in imports]),
                             tuple([child for child, guard in imports
                                    if guard is Guard.TRY and child.partition(".")[0] != top]),
                             tuple([(child, guard in _SWALLOWED) for child, guard in reversed(imports)]))
        self._nodes[name] = node
        return node

    def _state_of(self, name: str, st: _ImportState) -> _ImportState:
        """What running `name` adds to `st` (its parent's state, copied), memoised."""
        node_of = self._node
        seen = st.seen
        guarded = st.guarded
        stack = [name]
        while stack:  # first pass: every module reached, and which are imported under a try
            current = stack.pop()
            if current in seen:
                continue
            seen.add(current)
            node = node_of(current)
            if node is None or node.extension is not None:
                continue
            # Another package's module imported under a swallowing try: optional for all.
            guarded.update(node.foreign_try)
            stack.extend(node.children)
        within: dict[str, bool] = {}
        reached = st.reached
        walk: list[tuple[str, bool]] = [(name, True)]
        while walk:  # second pass, depth first in statement order: the load order
            current, is_required = walk.pop()
            before = reached.get(current)
            if before is not None and (before or not is_required):
                continue
            reached[current] = is_required
            node = node_of(current)
            if node is None:
                continue
            if node.extension is not None:
                st.first.setdefault(node.extension, len(st.first))
                (st.required if is_required else st.optional).append(node.extension)
                continue
            if not is_required:
                walk.extend([(child, False) for child, _ in node.reversed_entries])
                continue
            children = []
            for child, swallowed in node.reversed_entries:
                if swallowed:
                    children.append((child, False))
                    continue
                inside = within.get(child)
                if inside is None:
                    inside = within[child] = _within(child, guarded)
                children.append((child, not inside))
            walk.extend(children)
        self._states[name] = st
        return st


@dataclass(slots=True)
class _ImportState:
    """What a process has run and loaded after some imports (see ImportGraph._state_after)."""

    seen: set[str] = field(default_factory=set)  # modules the first pass reached
    guarded: set[str] = field(default_factory=set)  # other packages' modules imported under a try
    reached: dict[str, bool] = field(default_factory=dict)  # module -> reached by a required path
    required: list[str] = field(default_factory=list)
    optional: list[str] = field(default_factory=list)
    first: dict[str, int] = field(default_factory=dict)  # extension -> when first reached

    def copy(self) -> _ImportState:
        """An independent copy to extend with a child module's import."""
        return _ImportState(set(self.seen), set(self.guarded), dict(self.reached), list(self.required),
                            list(self.optional), dict(self.first))


def _runs(statements: list[tuple[str, Guard]]) -> list[tuple[str, Guard]]:
    """The modules import statements run, in order: `import a.b` runs a, then a.b. Only the
    module named is what a try guards (the cross-package rule), though a parent's failure is
    swallowed by it too. A repeated (module, guard) pair is dropped: it changes no walk (the
    first one has reached that module, the same way, by the time a later one is popped)."""
    result: dict[tuple[str, Guard], None] = {}
    for name, guard in statements:
        parts = name.split(".")
        parent = Guard.PARENT_TRY if guard == Guard.TRY else Guard.PARENT
        for i in range(1, len(parts) + 1):
            result[(".".join(parts[:i]), guard if i == len(parts) else parent)] = None
    return list(result)


def _within(name: str, modules: set[str]) -> bool:
    """True if `name` is one of `modules` or inside one of them."""
    while True:
        if name in modules:
            return True
        name, dot, _ = name.rpartition(".")
        if not dot:
            return False


def _absolute(target: str, package: str) -> str | None:
    """`from ..x import` inside `package` -> the absolute module name."""
    if not target.startswith("."):
        return target
    dots = len(target) - len(target.lstrip("."))
    base = package.split(".") if package else []
    if dots - 1 > len(base):
        return None
    base = base[: len(base) - (dots - 1)]
    rest = target[dots:]
    return ".".join([*base, rest] if rest else base) or None


def _statement_imports(statement: str, package: str) -> list[str]:
    """The modules one import statement imports (for `from M import a`, M and maybe M.a)."""
    if statement.startswith("from"):
        m = _FROM.match(_COMMENT.sub("", statement))
        if m is None:
            return []
        module = _absolute(m.group(1), package)
        if module is None:
            return []
        names = [n.split()[0] for n in m.group(2).replace("\\\n", " ").split(",") if n.strip()]
        # `from M import a`: a may be a submodule; the resolver decides (no such file: skipped).
        return [module] + [f"{module}.{n}" for n in names if _NAME.fullmatch(n)]
    body = statement[len("import"):].replace("\\\n", " ")
    return [part.split()[0] for part in body.split(",") if part.strip() and _NAME.match(part.strip())]


def _block_end(indent: int) -> re.Pattern[str]:
    """The first code line indented no deeper than `indent`: where a block opened there ends."""
    pattern = _BLOCK_END.get(indent)
    if pattern is None:
        pattern = _BLOCK_END[indent] = re.compile(r"^[ \t]{0,%d}(?=[^\s#])".replace("%d", str(indent)), re.M)
    return pattern


_BLOCK_END: dict[int, re.Pattern[str]] = {}


def _header_end(source: str, m: re.Match[str]) -> int:
    """Where the header of the block a `def`/`class`/`if` line opens ends: after its colon (the
    line's end when the body follows on the line itself)."""
    line = m.group(0)
    if not _OPENS_BLOCK.search(line) and line.count("(") > line.count(")"):
        colon = _OPENS_BLOCK.search(source, m.end())  # a signature over several lines
        return colon.end() if colon is not None else len(source)
    return m.end()


def _scan_imports(source: str, package: str) -> list[tuple[str, Guard]]:
    """The imports a module's code runs when it is imported, each with what guards it."""
    entries: list[tuple[str, bool, list[_Block]]] = []
    blocks: list[_Block] = []
    doc = _DOCSTRING.match(source)  # a docstring is not code (nor is a class's, below)
    pos = doc.end() if doc is not None else 0
    while True:
        m = _LINE.search(source, pos)
        if m is None:
            break
        pos = m.end() + 1
        indent = len(m.group(1).expandtabs()) if m.group(1) else 0
        keyword, rest, statement = m.group(2), m.group(3), m.group(4)
        continues = keyword in ("except", "finally", "else", "elif")
        while blocks and (blocks[-1].indent > indent or (blocks[-1].indent == indent and not continues)):
            blocks.pop()
        if continues and blocks and blocks[-1].indent == indent:
            if keyword in ("except", "finally") and blocks[-1].kind in ("try", "except"):
                if keyword == "finally" and blocks[-1].kind == "try":
                    blocks[-1].reraises = True  # try/finally, no handler: nothing is swallowed
                blocks[-1].kind = "except"
            continue
        if keyword is None and statement is None:
            continue  # a statement at column 0: it closed every block
        if (keyword is not None and keyword.endswith("def")) or (
                keyword == "if" and rest and _TYPE_CHECKING.match(rest)):
            # A function body runs when called, not on import: skip to where it ends (most
            # of a package's source is function bodies, so this is most of the speed).
            body = _header_end(source, m)
            if keyword == "if":
                blocks.append(_Block(indent, "cond"))  # its `else:` runs
            end = _block_end(indent).search(source, body)
            pos = end.start() if end is not None else len(source)
            continue
        if keyword == "if":
            blocks.append(_Block(indent, "cond"))
        elif keyword == "try":
            blocks.append(_Block(indent, "try"))
        elif keyword in ("class", "with", "for", "while"):
            blocks.append(_Block(indent, "other"))
            doc = _DOCSTRING.match(source, _header_end(source, m)) if keyword == "class" else None
            if doc is not None:
                pos = doc.end()
        elif keyword == "raise":
            handler = next((b for b in reversed(blocks) if b.kind == "except"), None)
            if handler is not None:
                handler.reraises = True
        elif statement is not None and (indent == 0 or blocks):
            # (An indented import outside any block seen is in a string or a lost context.)
            conditional = any(b.kind in ("cond", "except") for b in blocks)
            guards = [b for b in blocks if b.kind == "try"]
            entries.extend((name, conditional, guards) for name in _statement_imports(statement, package))
    out: list[tuple[str, Guard]] = []
    for name, conditional, guards in entries:
        if any(not g.reraises for g in guards):
            out.append((name, Guard.TRY))
        else:
            out.append((name, Guard.CONDITION if conditional else Guard.NONE))
    return out
