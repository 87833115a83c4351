"""`python -m ldscope` entry point."""

from ldscope.cli import main

main()
