"""Peer corpora: ELF files other people made (pyelftools' test files, Debian packages of
other machines, libc6-dbg's debug files), read by ldscope and checked against readelf.

`sources` finds or fetches them, `probe` says what ldscope and readelf make of each file,
`cli` runs every ldscope command over them, `report` prints the figures
(`python -m tests.peer_corpora.report`). See README.md here.
"""
