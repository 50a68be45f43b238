"""Fix hints in the spelling of the surface that shows them.

Engines name options as ATC does (``--input_shape``), the spelling the converter's command
preview and ATC's own messages use. On the ``studio`` command line the same options are written
``--input-shape``: :func:`cli_error` rewrites a UserError's text for the command line, leaving
alone what is ATC's own (additional ATC arguments, the printed atc command).
"""

from __future__ import annotations

import re

from studio.core.errors import UserError

# ATC option -> the `studio convert` flag (both spellings are accepted there).
CLI_FLAGS = {name: name.replace("_", "-") for name in (
    "input_shape", "output_type", "insert_op_conf", "fusion_switch_file", "soc_version", "input_format",
    "op_debug_level", "precision_mode", "out_nodes", "dynamic_batch_size", "dynamic_image_size", "dynamic_dims",
    "keep_fp32", "fp16_io", "validate_image")}
_FLAG = re.compile(r"--([a-z0-9_]+)(?=[\s=\"'.,;:)/]|$)")


def cli_text(text: str | None) -> str | None:
    """``text`` with ATC spellings of studio flags turned into the command line's."""
    if not text:
        return text
    return _FLAG.sub(lambda m: "--" + CLI_FLAGS.get(m[1], m[1]), text)


def cli_error(exc: UserError) -> UserError:
    """The same error, spelled for the command line (errors about raw ATC arguments are kept)."""
    if exc.where == "additional arguments":
        return exc
    return UserError(cli_text(exc.what), cli_text(exc.where), cli_text(exc.fix))
