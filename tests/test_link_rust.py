"""A real cargo build: a crate linking C static libraries through build.rs, broken by dropping
one archive; `ldscope link --from-log` on cargo's failure output predicts the same errors."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from ldscope.analysis._link import build_report
from ldscope.cli import cli
from ldscope.linker.frontend._cmdline import resolve_link_line
from ldscope.linker.frontend._logparse import find_link_in_log
from tests.link_oracle import parse

CARGO = shutil.which("cargo") or os.path.expanduser("~/.cargo/bin/cargo")
pytestmark = [pytest.mark.slow,  # a real cargo build
              pytest.mark.skipif(not os.path.exists(CARGO) or shutil.which("gcc") is None,
                                 reason="cargo (and gcc) needed")]

BUILD_RS = r'''
use std::env;
use std::path::PathBuf;
use std::process::Command;

fn run(cmd: &mut Command) {
    let status = cmd.status().expect("spawn");
    assert!(status.success(), "{:?} failed", cmd);
}

fn main() {
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    for name in ["foo", "bar", "baz"] {
        let obj = out.join(format!("{name}.o"));
        run(Command::new("gcc").args(["-c", "-fPIC", "-o"]).arg(&obj).arg(format!("csrc/{name}.c")));
        let lib = out.join(format!("libc{name}.a"));
        let _ = std::fs::remove_file(&lib);
        run(Command::new("ar").arg("rcs").arg(&lib).arg(&obj));
    }
    println!("cargo:rustc-link-search=native={}", out.display());
    println!("cargo:rustc-link-lib=static=cfoo");
    if env::var("LDSCOPE_DEMO_BREAK").is_err() {
        println!("cargo:rustc-link-arg={}", out.join("libcbar.a").display());
    }
    println!("cargo:rustc-link-arg={}", out.join("libcbaz.a").display());
    println!("cargo:rerun-if-env-changed=LDSCOPE_DEMO_BREAK");
    println!("cargo:rerun-if-changed=csrc");
}
'''


def make_crate(d: Path) -> None:
    """A bin crate with no dependencies (works offline)."""
    (d / "src").mkdir()
    (d / "csrc").mkdir()
    (d / "Cargo.toml").write_text('[package]\nname = "ldscope_demo"\nversion = "0.1.0"\n'
                                  'edition = "2021"\nbuild = "build.rs"\n\n[dependencies]\n')
    (d / "build.rs").write_text(BUILD_RS)
    (d / "csrc" / "foo.c").write_text(
        "extern int bar_value(int); extern int bar_scale;\nextern int baz(void);\n"
        "int foo_compute(int x) { return bar_value(x) * bar_scale + baz(); }\n")
    (d / "csrc" / "bar.c").write_text("int bar_scale = 2;\nint bar_value(int x) { return x + 40; }\n")
    (d / "csrc" / "baz.c").write_text("int baz(void) { return 0; }\n")
    (d / "src" / "main.rs").write_text(
        'extern "C" { fn foo_compute(x: i32) -> i32; }\n'
        'fn main() { println!("{}", unsafe { foo_compute(1) }); }\n')


def cargo(d: Path, broken: bool) -> subprocess.CompletedProcess[str]:
    """`cargo build --offline` in the crate."""
    env = dict(os.environ, CARGO_TARGET_DIR=str(d / "target"), CARGO_TERM_COLOR="never")
    env.pop("LDSCOPE_DEMO_BREAK", None)
    if broken:
        env["LDSCOPE_DEMO_BREAK"] = "1"
    return subprocess.run([CARGO, "build", "--offline", "--quiet"], cwd=d, env=env,
                          capture_output=True, text=True, timeout=600)


def test_cargo_dropped_archive_predicted_from_log(tmp_path: Path) -> None:
    crate = tmp_path / "crate"
    crate.mkdir()
    make_crate(crate)
    ok = cargo(crate, broken=False)
    if ok.returncode != 0 and "could not" in ok.stderr and "linking" not in ok.stderr:
        pytest.skip(f"cargo cannot build here: {ok.stderr[-400:]}")
    assert ok.returncode == 0, ok.stderr
    bad = cargo(crate, broken=True)
    assert bad.returncode != 0
    log = bad.stderr
    (tmp_path / "build.log").write_text(log)
    found = find_link_in_log(log)
    assert found.origin == "rustc linker note"
    line = resolve_link_line(list(found.argv), cwd=found.cwd or str(crate), source="log")
    report = build_report(line, fix=True)
    predicted = {e.symbol for e in report.errors if e.kind == "undefined-reference"}
    assert predicted == found.reported_symbols() == {"bar_value", "bar_scale"}
    for e in report.errors:
        if e.kind == "undefined-reference":
            assert e.referenced_by is not None and e.referenced_by.endswith("libcfoo.a(foo.o)")
            assert any(d.status == "search-path" and d.where.endswith("libcbar.a") for d in e.defined_in)
    # The log's own diagnostics (rust-lld's wording) name the same referrer.
    plain = [x.strip().removeprefix("= note:").strip().replace("rust-lld:", "ld.lld:")
             for x in log.splitlines()]
    real = parse("lld", "\n".join(x if not x.startswith(">>>") else ">>>" + " " * 15 + x[3:].strip()
                                  for x in plain))
    assert {(k, s) for k, s, _ in real.facts} == {("undefined-reference", "bar_value"),
                                                  ("undefined-reference", "bar_scale")}
    assert any(f.fixes_alone and "-lcbar" in f.description for f in report.fixes)
    # The fix in a cargo user's words: build.rs's rustc-link-arg, simulated where rustc puts it.
    cargo_fix = next(f for f in report.fixes if f.fixes_alone and "-lcbar" in f.description)
    assert cargo_fix.user_description is not None and "cargo:rustc-link-arg=-lcbar" in cargo_fix.user_description
    assert "-C link-arg=-lcbar" in cargo_fix.user_description and cargo_fix.user_links is True
    result = CliRunner().invoke(cli, ["link", "--from-log", str(tmp_path / "build.log"), "--format", "json"])
    assert result.exit_code == 1, result.output
    assert '"bar_value"' in result.output and '"schema": "ldscope.link/1"' in result.output
