"""Running ldscope in a child that reports its own peak RSS (VmHWM) on stderr."""

from __future__ import annotations

# `python -c MEASURED_CLI ARGS…` runs the CLI, then writes `PEAK_KB N` on stderr and exits with
# the CLI's status without tearing the interpreter down (as ldscope.cli.main does).
MEASURED_CLI = (
    "import os, sys\n"
    "os.environ.setdefault('OPENBLAS_NUM_THREADS', '1')  # as ldscope.cli.main does\n"
    "from ldscope.cli import cli\n"
    "try:\n"
    "    cli.main(prog_name='ldscope')\n"
    "except SystemExit as exc:\n"
    "    code = exc.code\n"
    "sys.stdout.flush()\n"
    "hwm = [x for x in open('/proc/self/status') if x.startswith('VmHWM:')][0].split()[1]\n"
    "sys.stderr.write('PEAK_KB ' + hwm + '\\n')\n"
    "os._exit(code or 0)\n"
)
