"""Studio's own advisor rules, one module each.

Every module has ``check(ctx) -> list[Finding]`` and reads only the
:class:`~studio.tools.advisor.context.Context` (model, profile op table, trace, accuracy result,
benchmark). :data:`RULES` lists them in the order the report shows ties.
"""

from __future__ import annotations

from studio.tools.advisor.rules import (accuracy, aicpu, decomposed, dynamic_shape, format_conversion, fusion,
                                        host_gap, model_load, tiny_batch, top_ops)

RULES = (fusion, decomposed, format_conversion, aicpu, dynamic_shape, top_ops, tiny_batch, host_gap,
         model_load, accuracy)

__all__ = ["RULES"]
