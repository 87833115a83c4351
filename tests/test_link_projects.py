"""Real-project link corpus (issue 11 item 9): Debian source packages built here, their link
lines mutated, linked by bfd, gold, lld and mold, compared with ldscope (tests/link_projects/).

The corpus tests are slow (a cold run fetches and builds the projects, ~8 minutes; a warm run
reuses ~/.cache/ldscope-tests/link-projects-KEY); they skip when the sources cannot be fetched
or a build tool is missing.  Every disagreement must be a named KNOWN_DISAGREEMENTS entry (with
its diagnosis), each of which is a strict xfail; per project and linker the agreement may not
fall below figures.json; every fix ldscope offers for an undefined-reference failure must link
with the real linker."""

from __future__ import annotations

import json
from functools import cache

import pytest

from tests.link_projects import harness, mutations, sources
from tests.link_projects.known import KNOWN_BAD_FIXES, KNOWN_DISAGREEMENTS, KNOWN_NO_FIX
from tests.link_projects.report import FIGURES, TARGET

PROJECTS = [r.name for r in sources.RECIPES]
RECORDED: dict[str, dict[str, list[int]]] = json.loads(FIGURES.read_text())


@cache
def _project(name: str) -> sources.Project:
    try:
        return sources.build(sources.recipe(name))
    except sources.Unavailable as e:
        pytest.skip(str(e))


@cache
def _outcomes(name: str) -> tuple[harness.Outcome, ...]:
    return tuple(harness.run_project(_project(name)))


# -- fast: the pieces, on made-up commands ---------------------------------------------------

def test_link_commands_are_recognised() -> None:
    link = sources.is_link_command
    assert link(["gcc", "-o", "x", "a.o", "-L", "lib", "-lz"])
    assert link(["g++", "-shared", "-Wl,-soname,libx.so.1", "-o", "libx.so.1", "a.o"])
    assert not link(["gcc", "-c", "a.c", "-o", "a.o"])
    assert not link(["gcc", "a.c", "-o", "a"])  # compiles first
    assert not link(["gcc", "-E", "a.h", "-o", "a.i"])
    assert not link(["gcc", "-x", "c", "-Werror", "-", "-o", "/dev/null"])  # a flag check, source on stdin
    assert not link(["gcc", "-o", "conftest", "-O1", "conftest.o", "-lpthread"])  # configure's own check


def test_link_commands_are_numbered_in_a_fixed_order() -> None:
    """By (directory, output), whatever order a parallel build ran them in."""
    made = [sources.LinkCommand(("gcc", "-o", out, "x.o"), cwd) for cwd, out in
            (("tests", "t2"), ("src", "prog"), ("tests", "t1"), ("lib", "libx.so"))]
    assert [(c.cwd, c.output) for c in sources.in_fixed_order(made)] == [
        ("lib", "libx.so"), ("src", "prog"), ("tests", "t1"), ("tests", "t2")]


def test_mutations_of_one_line() -> None:
    cmd = sources.LinkCommand(("gcc", "-O1", "-o", "prog", "main.o", "util.o", "libfoo.a", "-L.", "-lbar", "-lm"), ".")
    got = {m.name: m.argv for m in mutations.mutate(cmd, 0)}
    assert got["original"] == cmd.argv
    assert got["drop -lbar"] == ("gcc", "-O1", "-o", "prog", "main.o", "util.o", "libfoo.a", "-L.", "-lm")
    assert got["drop libfoo.a"] == ("gcc", "-O1", "-o", "prog", "main.o", "util.o", "-L.", "-lbar", "-lm")
    assert got["drop object main.o"] == ("gcc", "-O1", "-o", "prog", "util.o", "libfoo.a", "-L.", "-lbar", "-lm")
    assert got["move libfoo.a first"] == ("gcc", "-O1", "-o", "prog", "libfoo.a", "main.o", "util.o", "-L.", "-lbar", "-lm")
    assert got["duplicate object main.o"][-1] == "main.o"
    assert got["duplicate archive libfoo.a"][-1] == "libfoo.a"
    assert got["as-needed"][:2] == ("gcc", "-Wl,--as-needed")
    assert got["Bstatic -lbar"][7:11] == ("-L.", "-Wl,-Bstatic", "-lbar", "-Wl,-Bdynamic")
    assert got["static"][-1] == "-static" and got["static-pie"][-1] == "-static-pie"
    assert "z defs" not in got
    shared = sources.LinkCommand(("gcc", "-shared", "-o", "libx.so", "a.o", "-lm"), ".")
    assert {m.name for m in mutations.mutate(shared, 0)} >= {"z defs", "drop -lm"}


def test_every_project_is_pinned_and_recorded() -> None:
    for r in sources.RECIPES:
        assert r.package in sources.PINS["packages"], r.name
    assert set(RECORDED) == set(PROJECTS)
    for key in (*KNOWN_DISAGREEMENTS, *KNOWN_BAD_FIXES, *KNOWN_NO_FIX):
        assert key.split("/", 1)[0] in PROJECTS, key


def test_real_facts_read_single_line_lld_references() -> None:
    err = ("ld.lld: error: undefined symbol: main\n"
           ">>> referenced by /usr/lib/x86_64-linux-gnu/Scrt1.o:(_start)\n")
    assert harness.real_facts("lld", err) == {("undefined-reference", "main")}


# -- slow: the corpus itself ----------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("name", PROJECTS)
def test_project_against_the_real_linkers(name: str) -> None:
    """One test a project (its variants are linked and predicted once): no disagreement outside
    KNOWN_DISAGREEMENTS, agreement per linker not below figures.json, every fix ldscope offers
    for an undefined-reference failure links with the real linker, and every missing-library
    failure (a library dropped or moved) has such a verified fix unless KNOWN_NO_FIX says why not."""
    outs = _outcomes(name)
    problems: list[str] = []
    for o in outs:
        if not o.agree and o.key not in KNOWN_DISAGREEMENTS:
            problems.append(f"new disagreement (add it to known.py with a diagnosis, or fix the model): {o.key}:\n"
                            f"    real rc={o.real_rc} {o.real_first[:1]} facts={o.real_facts}\n"
                            f"    ldscope links={o.predicted_links} {o.predicted_first[:1]} "
                            f"facts={o.predicted_facts} {o.error or ''}")
        if o.fix_links is False and o.key not in KNOWN_BAD_FIXES:
            problems.append(f"fix refused by the real linker: {o.key}: {o.fix!r}: {o.fix_argv}\n    {o.fix_first[:1]}")
        if o.missing_library and o.fix_links is not True and o.key not in KNOWN_NO_FIX:
            problems.append(f"missing-library failure without a verified fix: {o.key}: {o.fix or 'no fix offered'}")
        if o.key in KNOWN_NO_FIX and o.fix_links is True:
            problems.append(f"{o.key} now has a verified fix: remove it from KNOWN_NO_FIX")
    seen = {o.key: o for o in outs}
    for key in (*KNOWN_DISAGREEMENTS, *KNOWN_NO_FIX):
        if key.split("/", 1)[0] == name and key not in seen:
            problems.append(f"{key} is no longer a case of the corpus: remove it from known.py")
    for key in KNOWN_DISAGREEMENTS:
        if key in seen and seen[key].agree:
            problems.append(f"{key} agrees now: remove it from KNOWN_DISAGREEMENTS")
    t = harness.table(list(outs))[name]
    for linker, (agree, total) in RECORDED[name].items():
        if t[linker][1] != total:
            problems.append(f"{name}/{linker}: {t[linker][1]} cases, figures.json says {total}")
        elif t[linker][0] < agree:
            problems.append(f"{name}/{linker}: {t[linker][0]}/{total} agree, was {agree}/{total}")
    assert not problems, "\n".join(problems)


def test_recorded_agreement_reaches_the_target() -> None:
    """≥ 99.5% per linker over the corpus (as recorded; the slow tests hold the model to it)."""
    for linker in harness.LINKERS:
        agree = sum(RECORDED[p][linker][0] for p in RECORDED if linker in RECORDED[p])
        total = sum(RECORDED[p][linker][1] for p in RECORDED if linker in RECORDED[p])
        if agree < TARGET * total:
            pytest.xfail(f"{linker}: {agree}/{total} = {100 * agree / total:.2f}% < 99.5%; "
                         f"the {len(KNOWN_DISAGREEMENTS)} cases in known.py say why")


@pytest.mark.slow
@pytest.mark.parametrize("key", [pytest.param(k, marks=pytest.mark.xfail(strict=True, reason=why))
                                 for k, why in KNOWN_DISAGREEMENTS.items()])
def test_known_disagreement(key: str) -> None:
    o = harness.run_case(_project(key.split("/", 1)[0]), key)
    assert o.agree, f"real rc={o.real_rc} {o.real_first[:1]}; ldscope {o.predicted_first[:1]}"
