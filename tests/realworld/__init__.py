"""The real-world corpus tier: ldscope's scan verdicts compared with the real Python import.

Each environment of `corpus.py` is a venv of pinned PyPI binary wheels (and the local PyTorch
CPU wheel), some with a deliberate breakage made from real files.  `build.py` builds it once per
machine, `truth.py` imports every native file of it for real (one fresh subprocess of the
venv's own interpreter per file), `compare.py` sets `ldscope scan` beside that truth, and
`report.py` prints the comparison (`python -m tests.realworld.report`).  The tests are in
`tests/test_realworld.py`.
"""
