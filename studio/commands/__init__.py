"""Headless subcommands: ``studio <command> ...``.

Every module in this package is one command. It defines ``NAME``, ``HELP``,
``add_arguments(parser)`` and ``run(args) -> int``, and imports its engine inside ``run`` so that
``studio --help`` and ``studio --version`` stay fast. A tool adds its command by adding a module.
"""
