"""Disagreements the corpus finds today, each with its diagnosis (the lead fixes the model
from this list; a key here that starts agreeing fails its strict xfail, so remove it then).

Keys are `project/command:mutation/linker` (command = index of the link command in the
project's captured build, see `python -m tests.link_projects.report --full FILE`)."""

from __future__ import annotations

KNOWN_DISAGREEMENTS: dict[str, str] = {
    'bzip2/1:drop object bzip2recover.o/bfd': (
        "the driver refuses a line with no input file ('gcc: fatal error: no input files', no link runs); `gcc -###` prints no linker line for it, and ldscope goes on with a fallback line (x86_64's Scrt1.o even for the aarch64 driver) and predicts `undefined reference to main`. Model: treat a driver command without inputs as the driver's fatal error."),
    'bzip2/1:drop object bzip2recover.o/gold': (
        "the driver refuses a line with no input file ('gcc: fatal error: no input files', no link runs); `gcc -###` prints no linker line for it, and ldscope goes on with a fallback line (x86_64's Scrt1.o even for the aarch64 driver) and predicts `undefined reference to main`. Model: treat a driver command without inputs as the driver's fatal error."),
    'bzip2/1:drop object bzip2recover.o/lld': (
        "the driver refuses a line with no input file ('gcc: fatal error: no input files', no link runs); `gcc -###` prints no linker line for it, and ldscope goes on with a fallback line (x86_64's Scrt1.o even for the aarch64 driver) and predicts `undefined reference to main`. Model: treat a driver command without inputs as the driver's fatal error."),
    'bzip2/1:drop object bzip2recover.o/mold': (
        "the driver refuses a line with no input file ('gcc: fatal error: no input files', no link runs); `gcc -###` prints no linker line for it, and ldscope goes on with a fallback line (x86_64's Scrt1.o even for the aarch64 driver) and predicts `undefined reference to main`. Model: treat a driver command without inputs as the driver's fatal error."),
    'bzip2-aarch64/1:drop object bzip2recover.o/bfd': (
        "the driver refuses a line with no input file ('aarch64-linux-gnu-gcc: fatal error: no input files', no link runs); `aarch64-linux-gnu-gcc -###` prints no linker line for it, and ldscope goes on with a fallback line (x86_64's Scrt1.o even for the aarch64 driver) and predicts `undefined reference to main`. Model: treat a driver command without inputs as the driver's fatal error."),
    'bzip2-aarch64/1:drop object bzip2recover.o/gold': (
        "the driver refuses a line with no input file ('aarch64-linux-gnu-gcc: fatal error: no input files', no link runs); `aarch64-linux-gnu-gcc -###` prints no linker line for it, and ldscope goes on with a fallback line (x86_64's Scrt1.o even for the aarch64 driver) and predicts `undefined reference to main`. Model: treat a driver command without inputs as the driver's fatal error."),
    'bzip2-aarch64/1:drop object bzip2recover.o/lld': (
        "the driver refuses a line with no input file ('aarch64-linux-gnu-gcc: fatal error: no input files', no link runs); `aarch64-linux-gnu-gcc -###` prints no linker line for it, and ldscope goes on with a fallback line (x86_64's Scrt1.o even for the aarch64 driver) and predicts `undefined reference to main`. Model: treat a driver command without inputs as the driver's fatal error."),
    'bzip2-aarch64/1:drop object bzip2recover.o/mold': (
        "the driver refuses a line with no input file ('aarch64-linux-gnu-gcc: fatal error: no input files', no link runs); `aarch64-linux-gnu-gcc -###` prints no linker line for it, and ldscope goes on with a fallback line (x86_64's Scrt1.o even for the aarch64 driver) and predicts `undefined reference to main`. Model: treat a driver command without inputs as the driver's fatal error."),
    'bzip2/2:duplicate object bzip2.o/lld': (
        "lld stops after its default --error-limit=20 ('too many errors emitted, stopping now'); ldscope lists every multiple definition (25 against lld's 20), so the symbol sets differ (same verdict, same first line). Model: cap lld's shown errors at 20, in lld's report order."),
    'bzip2-aarch64/2:duplicate object bzip2.o/lld': (
        "lld stops after its default --error-limit=20 ('too many errors emitted, stopping now'); ldscope lists every multiple definition (25 against lld's 20), so the symbol sets differ (same verdict, same first line). Model: cap lld's shown errors at 20, in lld's report order."),
    'lz4/0:drop object lz4io.o/lld': (
        "lld stops after its default --error-limit=20 ('too many errors emitted, stopping now'); ldscope lists every undefined symbol (23 against lld's 20), so the symbol sets differ (same verdict, same first line). Model: cap lld's shown errors at 20, in lld's report order."),
    'lz4/0:duplicate object lz4.o/lld': (
        "lld stops after its default --error-limit=20 ('too many errors emitted, stopping now'); ldscope lists every multiple definition (48 against lld's 20), so the symbol sets differ (same verdict, same first line). Model: cap lld's shown errors at 20, in lld's report order."),
    'cjson/0:duplicate object cJSON.c.o/lld': (
        "lld stops after its default --error-limit=20 ('too many errors emitted, stopping now'); ldscope lists every multiple definition (78 against lld's 20), so the symbol sets differ (same verdict, same first line). Model: cap lld's shown errors at 20, in lld's report order."),
    'cjson/4:duplicate object parse_examples.c.o/lld': (
        "lld stops after its default --error-limit=20 ('too many errors emitted, stopping now'); ldscope lists every multiple definition (81 against lld's 20: the test object #includes cJSON.c, so the duplicate brings all of cJSON's globals), so the symbol sets differ (same verdict, same first line). Model: cap lld's shown errors at 20, in lld's report order."),
    'bzip2/0:Bstatic -lc/gold': (
        "-shared with `-Wl,-Bstatic -lc`: gold reports the non-PIC libc.a members' relocations (ldscope predicts that too, naming dl-support.o instead of exit.o first) and also `libc.a(dl-support.o):function _dl_aux_init: error: undefined reference to '_start'`, which ldscope does not predict (it does not extract/report _start's reference in a shared link)."),
    'bzip2-aarch64/0:Bstatic -lc/bfd': (
        "aarch64 -shared with `-Wl,-Bstatic -lc`: bfd fails (libc.a(libc-start.o) undefined __fini_array_start, __init_array_*, __preinit_array_* -- those are defined only in executables -- and R_AARCH64_ADR_PREL_PG_HI21 'can not be used when making a shared object'); ldscope predicts the link succeeds. On x86_64 it agrees on the same line: the aarch64 model misses both the linker-defined-symbol rule and non-PIC relocations into -shared."),
    'bzip2-aarch64/0:Bstatic -lc/gold': (
        "aarch64 -shared with static libc.a: gold fails 'libc.a(malloc.o): unsupported TLSLE reloc 549 in shared code'; ldscope predicts success: no aarch64 TLS local-exec / non-PIC relocation check for -shared."),
    'bzip2-aarch64/0:Bstatic -lc/lld': (
        "aarch64 -shared with static libc.a: lld fails 'relocation R_AARCH64_TLSLE_ADD_TPREL_HI12 against .LANCHOR4 cannot be used with -shared'; ldscope predicts success: no aarch64 relocation check for -shared."),
    'bzip2-aarch64/0:Bstatic -lc/mold': (
        "aarch64 -shared with static libc.a: mold fails 'libc.a(malloc.o):(.text): relocation R_AARCH64_TLSLE_ADD_TPREL_HI12 against `.LANCHOR4` can not be used when making a shared object'; ldscope predicts success: no aarch64 relocation check for -shared."),
}

# Fixes ldscope offered that the real linker refused (key as above): none may be added silently.
KNOWN_BAD_FIXES: dict[str, str] = {}
