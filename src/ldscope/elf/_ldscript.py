"""GNU ld scripts as found in library directories (glibc's libc.so, Debian's libncurses.so).

Only the commands that matter for finding a library's inputs are modelled: INPUT, GROUP,
AS_NEEDED, OUTPUT_FORMAT, OUTPUT_ARCH, SEARCH_DIR and ENTRY.  Everything else (SECTIONS,
assignments, VERSION, ...) is recorded in `unknown_commands`, so a script ldscope does
not fully understand is reported rather than misread.

The lexing follows GNU ld 2.40, checked against the real `ld`:
- file names in INPUT/GROUP may not start with a digit and may contain `,`: `INPUT(a.o,b.o)`
  is ONE file named "a.o,b.o" to GNU ld (a comma separates only after a space or a quote);
  such names are kept as ld reads them and a warning is added;
- characters ld does not accept in names (`@`, `&`, `#` inside a list, ...) are skipped with
  a warning, as ld does; a quote without its closing quote is skipped the same way;
- `/* ... */` comments anywhere between tokens, `#` comments to the end of line between
  commands; keywords are case-sensitive.
Structural errors GNU ld rejects (unbalanced parentheses, unterminated comment, empty
INPUT(), GROUP inside INPUT, AS_NEEDED outside a list, wrong argument counts) raise
InputFormatError with the offset.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from ldscope.elf._archive import AR_MAGIC, THIN_MAGIC
from ldscope.elf._regular import NotRegularFileError, open_regular_fd
from ldscope.elf.constants import ELF_MAGIC
from ldscope.errors import InputFormatError

#: Commands GNU ld accepts at the top level of a script (ldgram.y), modelled or not.
LD_COMMANDS = frozenset(
    (
        "INCLUDE", "SECTIONS", "MEMORY", "PHDRS", "VERSION", "EXTERN", "ASSERT", "TARGET",
        "SEARCH_DIR", "OUTPUT", "OUTPUT_FORMAT", "OUTPUT_ARCH", "FORCE_COMMON_ALLOCATION",
        "FORCE_GROUP_ALLOCATION", "INHIBIT_COMMON_ALLOCATION", "INPUT", "GROUP", "MAP",
        "STARTUP", "HLL", "SYSLIB", "FLOAT", "NOFLOAT", "NOCROSSREFS", "NOCROSSREFS_TO",
        "INSERT", "REGION_ALIAS", "LD_FEATURE", "ENTRY", "PROVIDE", "PROVIDE_HIDDEN", "HIDDEN",
    )
)  # fmt: skip
_SINGLE_ARG = ("OUTPUT_ARCH", "SEARCH_DIR", "ENTRY")
_NEEDS_SEMICOLON = frozenset(("PROVIDE", "PROVIDE_HIDDEN", "HIDDEN"))
_LIST_START = frozenset("_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ/.\\$~=")
_LIST_CHARS = _LIST_START | frozenset("0123456789-+:[],")
_SCRIPT_CHARS = _LIST_CHARS | frozenset("*?^!")
_WHITE = " \t\n\r"
_ASSIGN_RE = re.compile(r"\s*(=|\+=|-=|\*=|/=|<<=|>>=|&=|\|=)")
_MAX_WARNINGS = 50
_MAX_SCRIPT_BYTES = 4 << 20


@dataclass(frozen=True, slots=True)
class ScriptInput:
    """One file named by INPUT or GROUP; `name` is "foo" for `-lfoo` (is_library_flag)."""

    name: str
    as_needed: bool
    in_group: bool
    is_library_flag: bool
    offset: int
    group: int | None = None


@dataclass(frozen=True, slots=True)
class UnknownCommand:
    """A statement not modelled here; known_to_ld is False where GNU ld would fail on it."""

    name: str
    offset: int
    known_to_ld: bool
    text: str


@dataclass(frozen=True, slots=True)
class LinkerScript:
    """What a linker script asks for.

    `groups` holds, per GROUP command, the indices of its entries in `inputs`;
    `output_format` is () or the one or three OUTPUT_FORMAT names (default, big, little);
    `unknown_commands` is the (shortened) text of each unmodelled statement and
    `unknown_details` the same statements with name, offset and whether GNU ld knows them.
    """

    name: str
    inputs: tuple[ScriptInput, ...]
    groups: tuple[tuple[int, ...], ...]
    output_format: tuple[str, ...]
    output_arch: str | None
    entry: str | None
    search_dirs: tuple[str, ...]
    unknown_commands: tuple[str, ...]
    unknown_details: tuple[UnknownCommand, ...] = field(default=())
    warnings: tuple[str, ...] = field(default=())

    @property
    def default_output_format(self) -> str | None:
        """The first OUTPUT_FORMAT name (the one used without -EB/-EL), if any."""
        return self.output_format[0] if self.output_format else None

    @property
    def rejected_by_ld(self) -> bool:
        """True when some statement is one GNU ld would refuse with a syntax error."""
        return any(not u.known_to_ld for u in self.unknown_details)

    @property
    def fully_understood(self) -> bool:
        """True when every statement of the script was modelled."""
        return not self.unknown_commands


class _Parser:
    def __init__(self, text: str, name: str) -> None:
        self.text = text
        self.name = name
        self.pos = 0
        self.inputs: list[ScriptInput] = []
        self.groups: list[tuple[int, ...]] = []
        self.output_format: tuple[str, ...] = ()
        self.output_arch: str | None = None
        self.entry: str | None = None
        self.search_dirs: list[str] = []
        self.unknown: list[UnknownCommand] = []
        self.warnings: list[str] = []

    def error(self, reason: str, offset: int) -> InputFormatError:
        return InputFormatError(self.name, reason, offset)

    def warn(self, message: str) -> None:
        if len(self.warnings) < _MAX_WARNINGS:
            self.warnings.append(message)
        elif len(self.warnings) == _MAX_WARNINGS:
            self.warnings.append("further warnings suppressed")

    def skip_blank(self, top: bool) -> None:
        """Skip whitespace and comments (`#` comments only between commands)."""
        text, n = self.text, len(self.text)
        while self.pos < n:
            c = text[self.pos]
            if c in _WHITE:
                self.pos += 1
            elif text.startswith("/*", self.pos):
                end = text.find("*/", self.pos + 2)
                if end < 0:
                    raise self.error("unterminated /* comment", self.pos)
                self.pos = end + 2
            elif top and c == "#":
                end = text.find("\n", self.pos)
                self.pos = n if end < 0 else end + 1
            else:
                return

    def word(self, start: frozenset[str], chars: frozenset[str]) -> str:
        text, begin = self.text, self.pos
        if begin >= len(text) or text[begin] not in start:
            return ""
        end = begin + 1
        while end < len(text) and text[end] in chars:
            end += 1
        self.pos = end
        return text[begin:end]

    def quoted(self) -> str | None:
        """A "..." string (no escapes, as in ld), or None after skipping a lone quote."""
        end = self.text.find('"', self.pos + 1)
        if end < 0:
            self.warn(f"unterminated quote at offset {self.pos}; GNU ld skips the '\"'")
            self.pos += 1
            return None
        value = self.text[self.pos + 1 : end]
        self.pos = end + 1
        return value

    def invalid(self, where: str) -> None:
        c = self.text[self.pos]
        self.warn(f"GNU ld ignores invalid character {c!r} at offset {self.pos} {where}")
        self.pos += 1

    def expect_open(self, command: str, at: int) -> int:
        self.skip_blank(top=False)
        if self.pos >= len(self.text) or self.text[self.pos] != "(":
            raise self.error(f"syntax error: {command} must be followed by '('", at)
        self.pos += 1
        return self.pos - 1

    def parse(self) -> LinkerScript:
        text, n = self.text, len(self.text)
        while True:
            self.skip_blank(top=True)
            if self.pos >= n:
                break
            c, at = text[self.pos], self.pos
            if c == ";":
                self.pos += 1
            elif c in ")}":
                raise self.error(f"syntax error: unbalanced {c!r}", at)
            elif c in '({"':
                self.skip_statement(at)
                self.record("<statement>", at, False)
            else:
                word = self.word(_SCRIPT_CHARS, _SCRIPT_CHARS)
                if not word:
                    self.invalid("between commands")
                else:
                    self.command(word, at)
        return LinkerScript(
            name=self.name,
            inputs=tuple(self.inputs),
            groups=tuple(self.groups),
            output_format=self.output_format,
            output_arch=self.output_arch,
            entry=self.entry,
            search_dirs=tuple(self.search_dirs),
            unknown_commands=tuple(u.text for u in self.unknown),
            unknown_details=tuple(self.unknown),
            warnings=tuple(self.warnings),
        )

    def record(self, name: str, at: int, known: bool) -> None:
        snippet = " ".join(self.text[at : self.pos].split())
        snippet = snippet if len(snippet) <= 80 else snippet[:77] + "..."
        self.unknown.append(UnknownCommand(name, at, known, snippet))

    def command(self, word: str, at: int) -> None:
        if word in ("INPUT", "GROUP"):
            self.input_list(word, self.expect_open(word, at))
        elif word == "AS_NEEDED":
            raise self.error("syntax error: AS_NEEDED is only valid inside INPUT or GROUP", at)
        elif word == "OUTPUT_FORMAT" or word in _SINGLE_ARG:
            args = self.arguments(word, self.expect_open(word, at))
            if word == "OUTPUT_FORMAT":
                if len(args) not in (1, 5) or (len(args) == 5 and args[1::2] != [",", ","]):
                    raise self.error(
                        "syntax error: OUTPUT_FORMAT takes one name or three comma-separated",
                        at,
                    )
                if self.output_format:
                    self.warn(f"second OUTPUT_FORMAT at offset {at}; GNU ld keeps the first")
                else:
                    self.output_format = tuple(args[0::2])
                return
            if len(args) != 1 or args[0] == ",":
                raise self.error(f"syntax error: {word} takes exactly one name", at)
            if word == "SEARCH_DIR":
                self.search_dirs.append(args[0])
            elif word == "ENTRY":
                self.entry = args[0]
            else:
                self.output_arch = args[0]
        else:
            assign = _ASSIGN_RE.match(self.text, self.pos) is not None
            ended_by_semicolon = self.skip_statement(at)
            if not ended_by_semicolon and self.pos < len(self.text):
                self.skip_blank(top=True)
                if self.text.startswith(";", self.pos):
                    self.pos += 1
                    ended_by_semicolon = True
            if assign or word in _NEEDS_SEMICOLON:
                known = ended_by_semicolon
            else:
                known = word in LD_COMMANDS
            self.record(word, at, known)

    def arguments(self, command: str, open_at: int) -> list[str]:
        """Names and "," tokens up to the closing parenthesis."""
        args: list[str] = []
        while True:
            self.skip_blank(top=False)
            if self.pos >= len(self.text):
                raise self.error(f"unbalanced '(': {command}( is never closed", open_at)
            c = self.text[self.pos]
            if c == ")":
                self.pos += 1
                return args
            if c == ",":
                self.pos += 1
                args.append(",")
            elif c == '"':
                value = self.quoted()
                if value is not None:
                    args.append(value)
            elif c in _SCRIPT_CHARS:
                args.append(self.name_with_comma_check(self.word(_SCRIPT_CHARS, _SCRIPT_CHARS)))
            elif c in "({}":
                raise self.error(f"syntax error: unexpected {c!r} in {command}(...)", self.pos)
            else:
                self.invalid(f"in {command}(...)")

    def name_with_comma_check(self, word: str) -> str:
        if "," in word:
            self.warn(
                f"GNU ld reads {word!r} as one name: a comma right after a name is part of it"
            )
        return word

    def input_list(self, command: str, open_at: int) -> None:
        """INPUT(...) or GROUP(...) with nested AS_NEEDED(...)."""
        in_group = command == "GROUP"
        group = len(self.groups) if in_group else None
        members: list[int] = []
        opens = [open_at]  # "(" of the command, then of each open AS_NEEDED
        counts = [0]  # items seen at each nesting level
        may_comma = False
        text, n = self.text, len(self.text)
        while True:
            self.skip_blank(top=False)
            if self.pos >= n:
                raise self.error(f"unbalanced '(': {command}( is never closed", opens[-1])
            c, at = text[self.pos], self.pos
            if c == ")":
                what = command if len(opens) == 1 else "AS_NEEDED"
                if counts[-1] == 0:
                    raise self.error(f"syntax error: empty {what}()", at)
                if not may_comma:
                    raise self.error(f"syntax error: ',' before ')' in {what}(...)", at)
                self.pos += 1
                opens.pop()
                counts.pop()
                if not opens:
                    break
                counts[-1] += 1
                may_comma = True
                continue
            if c == ",":
                if not may_comma:
                    raise self.error(f"syntax error: unexpected ',' in {command}(...)", at)
                self.pos += 1
                may_comma = False
                continue
            if c == '"':
                value = self.quoted()
                if value is None:
                    continue
                flag = False
            elif text.startswith("-l", at) and at + 2 < n and text[at + 2] in _LIST_CHARS:
                self.pos += 2
                value, flag = self.word(_LIST_CHARS, _LIST_CHARS), True
                value = self.name_with_comma_check(value)
            elif c in _LIST_START:
                value, flag = self.word(_LIST_START, _LIST_CHARS), False
                if value == "AS_NEEDED":
                    opens.append(self.expect_open("AS_NEEDED", at))
                    counts.append(0)
                    may_comma = False
                    continue
                if value in ("INPUT", "GROUP"):
                    raise self.error(f"syntax error: {value} inside {command}(...)", at)
                value = self.name_with_comma_check(value)
            elif c == "(":
                raise self.error(f"syntax error: unexpected '(' in {command}(...)", at)
            else:
                self.invalid(f"in {command}(...)")
                continue
            members.append(len(self.inputs))
            self.inputs.append(ScriptInput(value, len(opens) > 1, in_group, flag, at, group))
            counts[-1] += 1
            may_comma = True
        if in_group:
            self.groups.append(tuple(members))

    def skip_statement(self, start: int) -> bool:
        """Skip an unmodelled statement: to `;`, past its bracketed body, or before a command.

        True when it ended with a `;`.
        """
        text, n = self.text, len(self.text)
        closers: list[tuple[str, int]] = []
        while True:
            self.skip_blank(top=not closers)
            if self.pos >= n:
                if closers:
                    raise self.error(f"unbalanced {closers[-1][0]!r}: never closed", closers[-1][1])
                return False
            c, at = text[self.pos], self.pos
            if c in "({":
                closers.append((c, at))
                self.pos += 1
            elif c in ")}":
                want = "(" if c == ")" else "{"
                if not closers or closers[-1][0] != want:
                    raise self.error(f"syntax error: unbalanced {c!r}", at)
                closers.pop()
                self.pos += 1
                if not closers:
                    return False
            elif c == '"':
                self.quoted()
            elif c == ";" and not closers:
                self.pos += 1
                return True
            elif c in _SCRIPT_CHARS:
                word = self.word(_SCRIPT_CHARS, _SCRIPT_CHARS)
                if not closers and at != start and word in LD_COMMANDS:
                    self.pos = at
                    return False
            else:
                self.pos += 1


def parse_linker_script(text: str, name: str) -> LinkerScript:
    """Parse GNU ld script text; InputFormatError (with offset) on syntax ld rejects."""
    return _Parser(text, name).parse()


def read_linker_script(path: str | os.PathLike[str]) -> LinkerScript:
    """Read (size-capped, never blocking on FIFOs) and parse the script file at `path`."""
    name = os.fspath(path)
    try:
        fd = open_regular_fd(name)
    except NotRegularFileError as exc:
        raise InputFormatError(name, exc.reason) from None
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise InputFormatError(name, f"cannot open: {reason}") from None
    try:
        st = os.fstat(fd)
        if st.st_size > _MAX_SCRIPT_BYTES:
            raise InputFormatError(name, f"too large for a linker script ({st.st_size} bytes)")
        with os.fdopen(os.dup(fd), "rb") as fh:
            data = fh.read(_MAX_SCRIPT_BYTES + 1)
    except OSError as exc:
        raise InputFormatError(name, f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(data) > _MAX_SCRIPT_BYTES:
        raise InputFormatError(name, "too large for a linker script")
    return parse_linker_script(data.decode("utf-8", "surrogateescape"), name)


_COMMAND_RE = re.compile(r"([A-Z_][A-Z0-9_]*)\s*[({]")


def looks_like_linker_script(first_bytes: bytes) -> bool:
    """Whether a file starting with these bytes (pass a few KiB) is a GNU ld script."""
    if first_bytes[:4] == ELF_MAGIC or first_bytes[:8] in (AR_MAGIC, THIN_MAGIC):
        return False
    if any(b < 0x20 and b not in b"\t\n\r\f\v" for b in first_bytes) or b"\x7f" in first_bytes:
        return False
    text = first_bytes.decode("utf-8", "replace")
    pos, n = 0, len(text)
    while pos < n:
        if text[pos] in _WHITE + "\f\v":
            pos += 1
        elif text.startswith("/*", pos):
            end = text.find("*/", pos + 2)
            if end < 0 or "GNU ld script" in text[pos:end]:
                return True  # a text file opening with a comment longer than the sample
            pos = end + 2
        elif text[pos] == "#":
            end = text.find("\n", pos)
            pos = n if end < 0 else end + 1
        else:
            break
    match = _COMMAND_RE.match(text, pos)
    return match is not None and match.group(1) in LD_COMMANDS
