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

import difflib
import re
from dataclasses import dataclass

from ldscope.vocab import Words

__all__ = [
    "DIFFERENCE_KINDS",
    "DifferenceKind",
    "Signature",
    "SignatureDifference",
    "compare_signatures",
    "parse_signature",
]

class DifferenceKind(Words):
    """How a found C++ signature differs from the wanted one."""

    PARAMETER_CHANGED = "parameter-changed"
    PARAMETER_ADDED = "parameter-added"
    PARAMETER_REMOVED = "parameter-removed"
    QUALIFIER_CHANGED = "qualifier-changed"
    RETURN_CHANGED = "return-changed"
    TEMPLATE_CHANGED = "template-changed"
    NAMESPACE_MOVED = "namespace-moved"
    ABI_TAG_CHANGED = "abi-tag-changed"
    CXX11_ABI = "cxx11-abi"
    NAME_CHANGED = "name-changed"  # different base name (the two are probably not the same entity)
    KIND_CHANGED = "kind-changed"  # one is a function, the other is data


DIFFERENCE_KINDS = tuple(k.value for k in DifferenceKind)

# Prefixes c++filt prints for special symbols, whose target is data or a function.
_DATA_PREFIXES = (
    "construction vtable for ", "vtable for ", "VTT for ", "typeinfo name for ",
    "typeinfo fn for ", "typeinfo for ", "guard variable for ", "TLS init function for ",
    "TLS wrapper function for ", "hidden alias for ", "java Class for ",
)  # fmt: skip
_FUNCTION_PREFIXES = (
    "non-virtual thunk to ", "virtual thunk to ", "covariant return thunk to ",
    "transaction clone for ", "global constructors keyed to ", "global destructors keyed to ",
)  # fmt: skip
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
_DECLARATOR = re.compile(r"\((?:[\w:<>, ]*::)?[*&]+\)")
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
_SPACE = re.compile(" ")
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

    def format(self) -> str:
        """Re-assemble a normalised one-line spelling of the signature."""
        name = self.qualified_name + "".join(self.name_abi_tags)
        if self.template_args:
            args = ", ".join(self.template_args)
            name += " " if name.endswith("<") else ""
            name += f"<{args} >" if args.endswith(">") else f"<{args}>"
        if self.is_function:
            name += "(" + ", ".join(self.parameters) + ")"
            if self.qualifiers:
                name += " " + " ".join(self.qualifiers)
        if self.return_type:
            name = f"{self.return_type} {name}"
        return f"{self.special}{name}" if self.special else name


_PARTS = {"return": "return type", "template": "template arguments", "abi-tags": "ABI tags"}


@dataclass(frozen=True, slots=True)
class SignatureDifference:
    """One way in which a found signature differs from the wanted one."""

    kind: DifferenceKind
    index: int | None
    wanted: str
    found: str
    part: str = ""

    def describe(self) -> str:
        """Human-readable one-liner, e.g. ``parameter 4: int → unsigned int``."""
        w, f = self.wanted or "(none)", self.found or "(none)"
        where = f"parameter {self.index}" if self.index is not None else _PARTS.get(self.part, self.part)
        if self.kind == DifferenceKind.PARAMETER_ADDED:
            return f"{where} added: {f}"
        if self.kind == DifferenceKind.PARAMETER_REMOVED:
            return f"{where} removed: {w}"
        text = f"{where}: {w} → {f}"
        if self.kind == DifferenceKind.CXX11_ABI:
            text += " (std::__cxx11 vs old ABI: _GLIBCXX_USE_CXX11_ABI differs)"
        elif self.kind == DifferenceKind.NAMESPACE_MOVED:
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
                group_end = _group_end(s, j)
                if not _DECLARATOR.match(s, j) or group_end >= n or s[group_end] != "(":
                    break
                # "operator void (S::*)()()": a declarator group and the parameters of
                # the function type belong to the conversion type.
                j = _group_end(s, group_end)
                continue
            depth += 1
        elif c == ")":
            if depth == 0:
                break
            depth -= 1
        j += 1
    while j > k and s[j - 1] == " ":
        j -= 1
    return j


_INTERESTING = re.compile(r"[()<>\[\]{}]|(?<![\w$])operator(?![\w$])")


def _group_end(s: str, open_at: int) -> int:
    """Index just past the ')' that closes the '(' at ``open_at`` (or ``len(s)``)."""
    depth = 0
    for k in range(open_at, len(s)):
        if s[k] == "(":
            depth += 1
        elif s[k] == ")":
            depth -= 1
            if depth == 0:
                return k + 1
    return len(s)


def _depths(s: str) -> list[int]:
    """Bracket depth of every character; characters of operator names and of
    ``(anonymous namespace)`` get ``-(depth + 1)`` so they never look like syntax."""
    n = len(s)
    depth = [0] * n
    stack: list[str] = []
    i = 0
    while i < n:
        m = _INTERESTING.search(s, i)
        d = len(stack)
        if m is None:
            depth[i:] = [d] * (n - i)
            break
        j = m.start()
        if j > i:
            depth[i:j] = [d] * (j - i)
        tok = m.group()
        if tok == "operator" or (tok == "(" and s.startswith(_ANON, j)):
            end = max(_operator_end(s, j), j + 8) if tok == "operator" else j + len(_ANON)
            depth[j:end] = [-(d + 1)] * (end - j)
            i = end
            continue
        if tok in _OPENERS:
            depth[j] = d
            stack.append(tok)
        elif tok == ">" and (not stack or stack[-1] != "<"):
            depth[j] = d  # '->' or a comparison inside an expression
        elif _CLOSERS[tok] in stack:
            while stack and stack.pop() != _CLOSERS[tok]:
                pass
            depth[j] = len(stack)
        else:
            depth[j] = d
        i = j + 1
    return depth


def _split_top(s: str, sep: str) -> list[str]:
    """Split ``s`` at occurrences of ``sep`` that are at bracket depth 0."""
    if sep not in s:
        return [s]
    depth = _depths(s)
    parts: list[str] = []
    start = 0
    width = len(sep)
    i = s.find(sep)
    while i >= 0:
        if all(depth[k] == 0 for k in range(i, i + width)):
            parts.append(s[start:i])
            start = i + width
            i = s.find(sep, start)
        else:
            i = s.find(sep, i + 1)
    parts.append(s[start:])
    return parts


def _matching_open(s: str, depth: list[int], close: int) -> int:
    """Index of the bracket that opens the one closing at ``close`` (or -1)."""
    want = _CLOSERS.get(s[close])
    d = depth[close]
    if d < 0:
        return -1
    for k in range(close - 1, -1, -1):
        if depth[k] == d and s[k] == want:
            return k
        if 0 <= depth[k] < d:
            return -1
    return -1


def _all_spaces(text: str) -> list[int]:
    return [m.start() for m in _SPACE.finditer(text)]


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


def _split_name(name: str, function: bool) -> tuple[str, str, tuple[str, ...], tuple[str, ...]]:
    """(scope, base name, own template args, abi tags of the base) of a qualified name.

    Only a function's own template arguments are split off; a data symbol such as
    ``vtable for std::vector<int>`` keeps them in its name."""
    parts = _split_top(name, "::")
    base = parts[-1].strip()
    scope = "::".join(p.strip() for p in parts[:-1])
    tags: list[str] = []
    template_args: tuple[str, ...] = ()
    base, tags = _strip_tags(base, tags)
    if function and base.endswith(">"):
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
    close = s.rfind(")")
    while close >= 0 and depth[close] != 0:
        close = s.rfind(")", 0, close)
    if close >= 0 and _QUALIFIERS.fullmatch(s[close + 1 :]):
        params_open = _matching_open(s, depth, close)
        params_close = close
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
    spaces = [i for i in _all_spaces(head) if head_depth[i] == 0]
    if spaces:
        cut = spaces[-1]
        return_type = head[:cut].strip() or None
        head = head[cut + 1 :]
    scope, base, template_args, name_tags = _split_name(head, is_function)
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
    special = next((p for p in (*_DATA_PREFIXES, *_FUNCTION_PREFIXES) if s.startswith(p)), None)
    m = _REFTEMP.match(s)
    if special is None and m:
        special = m.group(0)
    data = special is not None and special not in _FUNCTION_PREFIXES
    if special is not None:
        s = s[len(special) :]
    sig = _parse_entity(s, special, version, tuple(clones), raw)
    if data and sig.is_function:
        # "typeinfo for int (char)" names a type, not a function: keep it whole.
        text = _norm(_ABI_TAG.sub("", s))
        return Signature(raw, text, "", text, abi_tags=sig.abi_tags, special=special,
                         version=version, clones=sig.clones)  # fmt: skip
    return sig


def parse_signature(demangled: str) -> Signature:
    """Parse a demangled name as ``c++filt`` prints it; never raises (best effort)."""
    try:
        return _parse(demangled)
    except Exception:
        text = demangled if isinstance(demangled, str) else repr(demangled)
        return Signature(raw=text, qualified_name=_norm(text), scope="", base_name=_norm(text))


# --------------------------------------------------------------------------- comparing


def _classify(wanted: str, found: str, default: DifferenceKind) -> DifferenceKind | None:
    """None if equal up to whitespace; else the most specific difference kind."""
    if _key(wanted) == _key(found):
        return None
    if _cxx11_key(wanted) == _cxx11_key(found):
        return DifferenceKind.CXX11_ABI
    if _untagged_key(wanted) == _untagged_key(found):
        return DifferenceKind.ABI_TAG_CHANGED
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


def _compare_parameters(wanted: tuple[str, ...], found: tuple[str, ...]) -> list[SignatureDifference]:
    diffs: list[SignatureDifference] = []
    matcher = difflib.SequenceMatcher(a=[_key(p) for p in wanted], b=[_key(p) for p in found], autojunk=False)
    for op, a0, a1, b0, b1 in matcher.get_opcodes():
        if op == "equal":
            continue
        paired = min(a1 - a0, b1 - b0)
        for k in range(paired):
            w, f = wanted[a0 + k], found[b0 + k]
            kind = _classify(w, f, DifferenceKind.PARAMETER_CHANGED) or DifferenceKind.PARAMETER_CHANGED
            diffs.append(SignatureDifference(kind, a0 + k + 1, w, f, "parameter"))
        for k in range(a0 + paired, a1):
            diffs.append(SignatureDifference(DifferenceKind.PARAMETER_REMOVED, k + 1, wanted[k], "", "parameter"))
        for k in range(b0 + paired, b1):
            diffs.append(SignatureDifference(DifferenceKind.PARAMETER_ADDED, k + 1, "", found[k], "parameter"))
    return diffs


def compare_signatures(wanted: Signature, found: Signature) -> list[SignatureDifference]:
    """List the differences between the wanted and the found signature (empty if same)."""
    diffs: list[SignatureDifference] = []

    def add(kind: DifferenceKind | None, w: str, f: str, part: str) -> None:
        if kind is not None:
            diffs.append(SignatureDifference(kind, None, w, f, part))

    if wanted.is_function != found.is_function:
        kinds = {True: "function", False: "data"}
        add(DifferenceKind.KIND_CHANGED, kinds[wanted.is_function], kinds[found.is_function], "kind")
    if _key(wanted.base_name) != _key(found.base_name):
        add(DifferenceKind.NAME_CHANGED, wanted.qualified_name, found.qualified_name, "name")
    elif _key(wanted.scope) != _key(found.scope):
        if _cxx11_key(wanted.scope) == _cxx11_key(found.scope):
            add(DifferenceKind.CXX11_ABI, wanted.scope, found.scope, "scope")
        elif _strip_templates(wanted.scope) == _strip_templates(found.scope):
            add(DifferenceKind.TEMPLATE_CHANGED, wanted.scope, found.scope, "scope")
        else:
            add(DifferenceKind.NAMESPACE_MOVED, wanted.scope, found.scope, "scope")
    w_targs, f_targs = ", ".join(wanted.template_args), ", ".join(found.template_args)
    if wanted.template_args or found.template_args:
        w_t, f_t = f"<{w_targs}>", f"<{f_targs}>"
        add(_classify(w_t, f_t, DifferenceKind.TEMPLATE_CHANGED), w_t, f_t, "template")
    if wanted.name_abi_tags != found.name_abi_tags:
        w_tags, f_tags = "".join(wanted.name_abi_tags), "".join(found.name_abi_tags)
        cxx11 = {"[abi:cxx11]"} == set(wanted.name_abi_tags) ^ set(found.name_abi_tags)
        add(DifferenceKind.CXX11_ABI if cxx11 else DifferenceKind.ABI_TAG_CHANGED, w_tags, f_tags, "abi-tags")
    w_ret, f_ret = wanted.return_type, found.return_type
    if w_ret is not None and f_ret is not None:
        add(_classify(w_ret, f_ret, DifferenceKind.RETURN_CHANGED), w_ret, f_ret, "return")
    if wanted.is_function and found.is_function:
        w_q, f_q = " ".join(wanted.qualifiers), " ".join(found.qualifiers)
        add(DifferenceKind.QUALIFIER_CHANGED if w_q != f_q else None, w_q, f_q, "qualifiers")
        diffs.extend(_compare_parameters(wanted.parameters, found.parameters))
    return diffs
