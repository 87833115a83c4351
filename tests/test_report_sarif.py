"""The one SARIF writer: its rule tables cover every kind, and link documents validate against
the official OASIS schema as scan documents do (tests/test_scan_formats.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from ldscope.cli import cli
from ldscope.report import LINK_RULES, PROBLEM_RULES, sarif_document
from ldscope.report._sarif import SarifResult, rule_name
from ldscope.vocab import LinkErrorKind, ProblemKind
from tests.link_cases import order_case
from tests.test_scan_formats import _sarif_schema


def test_every_problem_kind_has_a_rule() -> None:
    assert set(PROBLEM_RULES) == set(ProblemKind)
    assert all(text.endswith(".") and len(text) > 20 for text in PROBLEM_RULES.values())


def test_every_link_error_kind_has_a_rule() -> None:
    assert set(LINK_RULES) == set(LinkErrorKind)
    assert all(text.endswith(".") and len(text) > 20 for text in LINK_RULES.values())


def test_rules_are_indexed_in_sorted_order() -> None:
    results = [SarifResult("missing-version", "error", "m", ()), SarifResult("missing-library", "warning", "m", ())]
    doc = sarif_document(results, PROBLEM_RULES)
    (run,) = doc["runs"]
    ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert ids == ["missing-library", "missing-version"]
    assert [r["ruleIndex"] for r in run["results"]] == [1, 0]
    assert run["tool"]["driver"]["rules"][0]["name"] == rule_name("missing-library") == "MissingLibrary"
    assert run["tool"]["driver"]["rules"][0]["shortDescription"]["text"] == PROBLEM_RULES[ProblemKind.MISSING_LIBRARY]


def _validate(doc: dict[str, object]) -> list[str]:
    import jsonschema

    schema = _sarif_schema()
    validator_cls = jsonschema.validators.validator_for(schema)
    validator_cls.check_schema(schema)
    validator = validator_cls(schema, format_checker=jsonschema.FormatChecker())
    return [f"{list(e.path)}: {e.message}" for e in validator.iter_errors(doc)]


@pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("ld.bfd") is None, reason="gcc and ld.bfd needed")
@pytest.mark.parametrize("case", ["order", "links"])
def test_link_sarif_valid_against_the_official_schema(case: str, tmp_path: Path) -> None:
    order_case(tmp_path)
    line = ["gcc", "main.o", "libbase.a", "libtop.a"] if case == "order" else ["gcc", "main.o", "libtop.a", "libbase.a"]
    result = CliRunner().invoke(cli, ["link", "--cwd", str(tmp_path), "--format", "sarif", "--", *line])
    doc = json.loads(result.output)
    assert _validate(doc) == []
    (run,) = doc["runs"]
    assert run["properties"]["links"] is (case == "links")
    if case == "links":
        assert run["results"] == [] and run["tool"]["driver"]["rules"] == []
    else:
        (res,) = run["results"]
        assert res["ruleId"] == "undefined-reference" and res["level"] == "error"
        rule = run["tool"]["driver"]["rules"][res["ruleIndex"]]
        assert rule["id"] == "undefined-reference"
        assert res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == f"file://{tmp_path}/libtop.a"
        # A broken document is caught (the validation is not vacuous).
        res["level"] = "fatal"
        assert _validate(doc)
