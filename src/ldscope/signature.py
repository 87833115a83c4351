"""Parse demangled C++ names (as ``c++filt`` prints them) and compare two signatures.

``parse_signature("int ns::f<int>(std::vector<int>, void (*)(int, char)) const")`` gives a
:class:`Signature` whose parameters were split at top-level commas only.  The scanner knows
the places where C++ spelling is not bracket-balanced: operator names (``operator<``,
``operator()``, ``operator,``, ``operator< <T>``, conversion operators),
``(anonymous namespace)``, lambdas ``{lambda(int)#1}`` and ``[abi:cxx11]`` tags.
:func:`compare_signatures` explains how a wanted signature differs from a found one,
recognising the ``_GLIBCXX_USE_CXX11_ABI`` (``std::__cxx11``) split as its own kind.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from dataclasses import dataclass

__all__ = [
    "DIFFERENCE_KINDS",
    "Signature",
    "SignatureDifference",
    "compare_signatures",
    "parse_signature",
]

DIFFERENCE_KINDS = (
    "parameter-changed",
    "parameter-added",
    "parameter-removed",
    "qualifier-changed",
    "return-changed",
    "template-changed",
    "namespace-moved",
    "abi-tag-changed",
    "cxx11-abi",
    "name-changed",  # different base name (the two are probably not the same entity)
    "kind-changed",  # one is a function, the other is data
)

# Prefixes c++filt prints for special symbols: (text, the inner entity is a function?)
_SPECIAL_PREFIXES: tuple[tuple[str, bool], ...] = (
    ("construction vtable for ", False),
    ("vtable for ", False),
    ("VTT for ", False),
    ("typeinfo name for ", False),
    ("typeinfo fn for ", False),
    ("typeinfo for ", False),
    ("guard variable for ", False),
    ("TLS init function for ", False),
    ("TLS wrapper function for ", False),
    ("hidden alias for ", False),
    ("java Class for ", False),
    ("non-virtual thunk to ", True),
    ("virtual thunk to ", True),
    ("covariant return thunk to ", True),
    ("transaction clone for ", True),
    ("global constructors keyed to ", True),
    ("global destructors keyed to ", True),
)
_REFTEMP = re.compile(r"reference temporary #\d+ for ")
_VERSION = re.compile(r"@{1,2}[\w.]*$")
_CLONE = re.compile(r"\s*\[clone [^\]]*\]\s*$")
_ABI_TAG = re.compile(r"\[abi:[^\]]*\]")
_QUALIFIERS = re.compile(
    r"(?: ?(?:const|volatile|restrict|__restrict|&&|&|transaction_safe|"
    r"noexcept(?: ?\([^()]*\))?|throw ?\([^()]*\)))* ?"
)
_QUALIFIER_TOKEN = re.compile(r"noexcept ?\([^()]*\)|throw ?\([^()]*\)|&&|&|[A-Za-z_]\w*")
_ANON = "(anonymous namespace)"
_OPERATOR_SYMBOLS = sorted(
    (
        "<<=", ">>=", "<=>", "->*", "()", "[]", "<<", ">>", "<=", ">=", "->", "==", "!=",
        "&&", "||", "++", "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<", ">",
        "+", "-", "*", "/", "%", "^", "&", "|", "~", "!", "=", ",",
    ),
    key=len,
    reverse=True,
)  # fmt: skip
_OPENERS = {"(": ")", "<": ">", "[": "]", "{": "}"}
_CLOSERS = {")": "(", ">": "<", "]": "[", "}": "{"}
_SPACE_NOT_BETWEEN_WORDS = re.compile(r"\s+(?=[^\w$])|(?<=[^\w$])\s+")
_WS = re.compile(r"\s+")
_VERBOSE_STD = {
    "std::string": "std::basic_string<char, std::char_traits<char>, std::allocator<char> >",
    "std::istream": "std::basic_istream<char, std::char_traits<char> >",
    "std::ostream": "std::basic_ostream<char, std::char_traits<char> >",
    "std::iostream": "std::basic_iostream<char, std::char_traits<char> >",
}
_STD_ABBREV = re.compile(r"(?<![\w$:])std::(?:string|istream|ostream|iostream)(?![\w$])")


@dataclass(frozen=True, slots=True)
class Signature:
    """A demangled C++ entity split into its parts (best effort, never raises)."""

    raw: str
    qualified_name: str
    scope: str
    base_name: str
    template_args: tuple[str, ...] = ()
    parameters: tuple[str, ...] = ()
    qualifiers: tuple[str, ...] = ()
    abi_tags: tuple[str, ...] = ()
    name_abi_tags: tuple[str, ...] = ()
    return_type: str | None = None
    is_function: bool = False
    special: str | None = None
    version: str | None = None
    clones: tuple[str, ...] = ()

    @property
    def has_template_args(self) -> bool:
        """True if the function or variable itself carries template arguments."""
        return bool(self.template_args)

    def format(self) -> str:
        """Re-assemble a normalised one-line spelling of the signature."""
        name = self.qualified_name + "".join(self.name_abi_tags)
        if self.template_args:
            args = ", ".join(self.template_args)
            name += f"<{args} >" if args.endswith(">") else f"<{args}>"
        if self.is_function:
            name += "(" + ", ".join(self.parameters) + ")"
            if self.qualifiers:
                name += " " + " ".join(self.qualifiers)
        if self.return_type:
            name = f"{self.return_type} {name}"
        return f"{self.special}{name}" if self.special else name


@dataclass(frozen=True, slots=True)
class SignatureDifference:
    """One way in which a found signature differs from the wanted one."""

    kind: str
    index: int | None
    wanted: str
    found: str
    part: str = ""

    def describe(self) -> str:
        """Human-readable one-liner, e.g. ``parameter 4: int → unsigned int``."""
        w, f = self.wanted or "(none)", self.found or "(none)"
        where = {
            "return": "return type",
            "scope": "scope",
            "template": "template arguments",
            "name": "name",
            "abi-tags": "ABI tags",
            "qualifiers": "qualifiers",
            "kind": "kind",
        }.get(self.part, self.part)
        if self.index is not None:
            where = f"parameter {self.index}"
        if self.kind == "parameter-added":
            return f"{where} added: {f}"
        if self.kind == "parameter-removed":
            return f"{where} removed: {w}"
        text = f"{where}: {w} → {f}"
        if self.kind == "cxx11-abi":
            text += " (std::__cxx11 vs old ABI: _GLIBCXX_USE_CXX11_ABI differs)"
        elif self.kind == "namespace-moved":
            text += " (moved to another namespace/class)"
        return text


# --------------------------------------------------------------------------- scanning


def _is_ident(c: str) -> bool:
    return c.isalnum() or c in "_$"


def _operator_end(s: str, i: int) -> int:
    """End (exclusive) of the operator name that starts with ``operator`` at ``i``."""
    n = len(s)
    k = i + 8
    while k < n and s[k] == " ":
        k += 1
    if s.startswith('""', k):  # user-defined literal: operator"" _suffix
        k += 2
        while k < n and s[k] == " ":
            k += 1
        while k < n and _is_ident(s[k]):
            k += 1
        return k
    for sym in _OPERATOR_SYMBOLS:
        if s.startswith(sym, k):
            end = k + len(sym)
            # c++filt writes "operator< <T>" so that the '<' of the template is not eaten.
            if s.startswith(" <", end):
                end += 1
            return end
    for word in ("new[]", "delete[]", "new", "delete", "co_await"):
        if s.startswith(word, k) and (k + len(word) == n or not _is_ident(s[k + len(word)])):
            return k + len(word)
    # Conversion operator: the type runs up to the parameter list's '(' at depth 0.
    depth = 0
    j = k
    while j < n:
        c = s[j]
        if c in "<[{":
            depth += 1
        elif c in ">]}":
            depth = max(0, depth - 1)
        elif c == "(":
            if depth == 0 and not s.startswith(_ANON, j):
                break
            depth += 1
        elif c == ")":
            if depth == 0:
                break
            depth -= 1
        j += 1
    while j > k and s[j - 1] == " ":
        j -= 1
    return j


def _depths(s: str) -> list[int]:
    """Bracket depth of every character; operator names and ``(anonymous namespace)``
    count as one level deeper so that they never look like top-level syntax."""
    n = len(s)
    depth = [0] * n
    stack: list[str] = []
    i = 0
    while i < n:
        c = s[i]
        d = len(stack)
        if (
            c == "o"
            and s.startswith("operator", i)
            and (i == 0 or not _is_ident(s[i - 1]))
            and (i + 8 >= n or not _is_ident(s[i + 8]))
        ):
            end = max(_operator_end(s, i), i + 8)
            for k in range(i, end):
                depth[k] = d + 1
            i = end
            continue
        if c == "(" and s.startswith(_ANON, i):
            for k in range(i, i + len(_ANON)):
                depth[k] = d + 1
            i += len(_ANON)
            continue
        if c in _OPENERS:
            depth[i] = d
            stack.append(c)
        elif c in _CLOSERS:
            opener = _CLOSERS[c]
            if c == ">" and (not stack or stack[-1] != "<"):
                depth[i] = d  # '->' or a comparison inside an expression
            elif opener in stack:
                while stack and stack.pop() != opener:
                    pass
                depth[i] = len(stack)
            else:
                depth[i] = d
        else:
            depth[i] = d
        i += 1
    return depth


def _split_top(s: str, sep: str) -> list[str]:
    """Split ``s`` at occurrences of ``sep`` that are at bracket depth 0."""
    depth = _depths(s)
    parts: list[str] = []
    start = 0
    i = 0
    width = len(sep)
    while i <= len(s) - width:
        if s.startswith(sep, i) and all(depth[k] == 0 for k in range(i, i + width)):
            parts.append(s[start:i])
            i += width
            start = i
        else:
            i += 1
    parts.append(s[start:])
    return parts


def _matching_open(s: str, depth: list[int], close: int) -> int:
    """Index of the bracket that opens the one closing at ``close`` (or -1)."""
    want = _CLOSERS.get(s[close])
    d = depth[close]
    for k in range(close - 1, -1, -1):
        if depth[k] == d and s[k] == want:
            return k
        if depth[k] < d:
            return -1
    return -1


def _norm(text: str) -> str:
    return _WS.sub(" ", text).strip()


def _key(text: str) -> str:
    """Canonical spelling for comparisons: whitespace only where two words meet."""
    return _SPACE_NOT_BETWEEN_WORDS.sub("", _norm(text))


def _cxx11_key(text: str) -> str:
    text = _STD_ABBREV.sub(lambda m: _VERBOSE_STD[m.group(0)], text)
    return _key(text.replace("std::__cxx11::", "std::").replace("[abi:cxx11]", ""))


def _untagged_key(text: str) -> str:
    return _key(_ABI_TAG.sub("", text))


def _args(inner: str) -> tuple[str, ...]:
    if not inner.strip():
        return ()
    return tuple(_norm(p) for p in _split_top(inner, ","))


def _unique(items: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


# --------------------------------------------------------------------------- parsing


def _split_name(name: str) -> tuple[str, str, tuple[str, ...], tuple[str, ...]]:
    """(scope, base name, own template args, abi tags of the base) of a qualified name."""
    parts = _split_top(name, "::")
    base = parts[-1].strip()
    scope = "::".join(p.strip() for p in parts[:-1])
    tags: list[str] = []
    template_args: tuple[str, ...] = ()
    base, tags = _strip_tags(base, tags)
    if base.endswith(">"):
        open_at = _matching_open(base, _depths(base), len(base) - 1)
        if open_at > 0:
            template_args = _args(base[open_at + 1 : -1])
            base, tags = _strip_tags(base[:open_at].rstrip(), tags)
    return scope, base, template_args, tuple(tags)


def _strip_tags(base: str, tags: list[str]) -> tuple[str, list[str]]:
    """Remove trailing ``[abi:...]`` tags from a name component, collecting them."""
    while base.endswith("]"):
        open_at = _matching_open(base, _depths(base), len(base) - 1)
        if open_at <= 0 or not base.startswith("[abi:", open_at):
            break
        tags = [base[open_at:], *tags]
        base = base[:open_at].rstrip()
    return base, tags


def _parse_entity(
    text: str, special: str | None, version: str | None, clones: tuple[str, ...], raw: str
) -> Signature:
    s = _norm(text)
    depth = _depths(s)
    params_open = -1
    params_close = -1
    # The parameter list is the last top-level (...) followed only by qualifiers.
    for close in range(len(s) - 1, -1, -1):
        if s[close] == ")" and depth[close] == 0:
            if _QUALIFIERS.fullmatch(s[close + 1 :]):
                params_open = _matching_open(s, depth, close)
                params_close = close
            break
    head = s
    params: tuple[str, ...] = ()
    quals: tuple[str, ...] = ()
    is_function = False
    if params_open > 0 and s[:params_open].strip():
        is_function = True
        head = s[:params_open].rstrip()
        params = _args(s[params_open + 1 : params_close])
        quals = tuple(_QUALIFIER_TOKEN.findall(s[params_close + 1 :]))
    return_type: str | None = None
    head_depth = _depths(head)
    spaces = [i for i, c in enumerate(head) if c == " " and head_depth[i] == 0]
    if spaces:
        cut = spaces[-1]
        return_type = head[:cut].strip() or None
        head = head[cut + 1 :]
    scope, base, template_args, name_tags = _split_name(head)
    clean_scope = _norm(_ABI_TAG.sub("", scope))
    qualified = f"{clean_scope}::{base}" if clean_scope else base
    return Signature(
        raw=raw,
        qualified_name=qualified,
        scope=clean_scope,
        base_name=base,
        template_args=template_args,
        parameters=params,
        qualifiers=quals,
        abi_tags=_unique(_ABI_TAG.findall(s)),
        name_abi_tags=name_tags,
        return_type=return_type,
        is_function=is_function,
        special=special,
        version=version,
        clones=clones,
    )


def _parse(demangled: str) -> Signature:
    raw = demangled
    s = _norm(demangled)
    version: str | None = None
    m = _VERSION.search(s)
    if m and m.start() > 0:
        version = m.group(0)
        s = s[: m.start()].rstrip()
    clones: list[str] = []
    while True:
        m = _CLONE.search(s)
        if not m:
            break
        clones.insert(0, m.group(0).strip()[7:-1])
        s = s[: m.start()]
    special: str | None = None
    function_target = True
    for prefix, is_func in _SPECIAL_PREFIXES:
        if s.startswith(prefix):
            special, function_target, s = prefix, is_func, s[len(prefix) :]
            break
    else:
        m = _REFTEMP.match(s)
        if m:
            special, function_target, s = m.group(0), False, s[m.end() :]
    sig = _parse_entity(s, special, version, tuple(clones), raw)
    if not function_target and sig.is_function:
        # "guard variable for f()" is data even though its target looks like a function.
        sig = dataclasses.replace(sig, is_function=False)
    return sig


def parse_signature(demangled: str) -> Signature:
    """Parse a demangled name as ``c++filt`` prints it; never raises (best effort)."""
    try:
        return _parse(demangled)
    except Exception:
        text = demangled if isinstance(demangled, str) else repr(demangled)
        return Signature(raw=text, qualified_name=_norm(text), scope="", base_name=_norm(text))


# --------------------------------------------------------------------------- comparing


def _classify(wanted: str, found: str, default: str) -> str | None:
    """None if equal up to whitespace; else the most specific difference kind."""
    if _key(wanted) == _key(found):
        return None
    if _cxx11_key(wanted) == _cxx11_key(found):
        return "cxx11-abi"
    if _untagged_key(wanted) == _untagged_key(found):
        return "abi-tag-changed"
    return default


def _strip_templates(scope: str) -> str:
    out: list[str] = []
    depth = 0
    for c in _key(scope):
        if c == "<":
            depth += 1
        elif c == ">" and depth:
            depth -= 1
        elif depth == 0:
            out.append(c)
    return "".join(out)


def _compare_parameters(
    wanted: tuple[str, ...], found: tuple[str, ...]
) -> list[SignatureDifference]:
    diffs: list[SignatureDifference] = []
    matcher = difflib.SequenceMatcher(
        a=[_key(p) for p in wanted], b=[_key(p) for p in found], autojunk=False
    )
    for op, a0, a1, b0, b1 in matcher.get_opcodes():
        if op == "equal":
            continue
        paired = min(a1 - a0, b1 - b0)
        for k in range(paired):
            w, f = wanted[a0 + k], found[b0 + k]
            kind = _classify(w, f, "parameter-changed") or "parameter-changed"
            diffs.append(SignatureDifference(kind, a0 + k + 1, w, f, "parameter"))
        for k in range(a0 + paired, a1):
            diffs.append(
                SignatureDifference("parameter-removed", k + 1, wanted[k], "", "parameter")
            )
        for k in range(b0 + paired, b1):
            diffs.append(SignatureDifference("parameter-added", k + 1, "", found[k], "parameter"))
    return diffs


def compare_signatures(wanted: Signature, found: Signature) -> list[SignatureDifference]:
    """List the differences between the wanted and the found signature (empty if same)."""
    diffs: list[SignatureDifference] = []

    def add(kind: str | None, w: str, f: str, part: str) -> None:
        if kind is not None:
            diffs.append(SignatureDifference(kind, None, w, f, part))

    if wanted.is_function != found.is_function:
        add("kind-changed", _kind(wanted), _kind(found), "kind")
    if _key(wanted.base_name) != _key(found.base_name):
        add("name-changed", wanted.base_name, found.base_name, "name")
    if _key(wanted.scope) != _key(found.scope):
        if _cxx11_key(wanted.scope) == _cxx11_key(found.scope):
            add("cxx11-abi", wanted.scope, found.scope, "scope")
        elif _strip_templates(wanted.scope) == _strip_templates(found.scope):
            add("template-changed", wanted.scope, found.scope, "scope")
        else:
            add("namespace-moved", wanted.scope, found.scope, "scope")
    w_targs, f_targs = ", ".join(wanted.template_args), ", ".join(found.template_args)
    if wanted.template_args or found.template_args:
        add(
            _classify(f"<{w_targs}>", f"<{f_targs}>", "template-changed"),
            f"<{w_targs}>",
            f"<{f_targs}>",
            "template",
        )
    if wanted.name_abi_tags != found.name_abi_tags:
        w_tags, f_tags = "".join(wanted.name_abi_tags), "".join(found.name_abi_tags)
        cxx11 = {"[abi:cxx11]"} == set(wanted.name_abi_tags) ^ set(found.name_abi_tags)
        add("cxx11-abi" if cxx11 else "abi-tag-changed", w_tags, f_tags, "abi-tags")
    if wanted.return_type is not None and found.return_type is not None:
        add(
            _classify(wanted.return_type, found.return_type, "return-changed"),
            wanted.return_type,
            found.return_type,
            "return",
        )
    if wanted.is_function and found.is_function:
        if wanted.qualifiers != found.qualifiers:
            add(
                "qualifier-changed",
                " ".join(wanted.qualifiers),
                " ".join(found.qualifiers),
                "qualifiers",
            )
        diffs.extend(_compare_parameters(wanted.parameters, found.parameters))
    return diffs


def _kind(sig: Signature) -> str:
    return "function" if sig.is_function else "data"


def describe_differences(differences: list[SignatureDifference]) -> list[str]:
    """``describe()`` of each difference, in order."""
    return [d.describe() for d in differences]
