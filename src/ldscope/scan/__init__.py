"""Scanning whole environments, wheels, directories and root filesystems."""
