"""Names vulture cannot see being used (the dead-code check in the test command).

Each entry says who uses it. Everything else unused in src/ is dead and fails the check.
"""

# click looks these up by name: the group's lazy command loading and the command callbacks
# (ldscope.cli.scan_cmd.scan, ldscope.cli.load_cmd.load: found through COMMANDS).
_.get_command
_.format_commands
scan
load
# The context-manager protocol passes these to __exit__.
exc_type
# Python calls a module's __getattr__ for names it lacks (PEP 562: ldscope's lazy API).
__getattr__
# Buffer protocols (RawBuffer) are used through indexing.
_.__getitem__
# Read from the file for readers' users: ELF header flags, a verneed entry's hash.
_.e_flags
_.hash
# Serialised into `ldscope info --format json` by to_jsonable (every ElfInfo field is).
_.version_base
# zipfile reads ZipInfo.compress_type when tests write wheels.
_.compress_type
# click calls a ParamType's convert (scan --max-member-size).
_.convert
