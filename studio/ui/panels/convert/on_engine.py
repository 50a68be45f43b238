"""The Converter's local (ONNX) conversion with Studio's engine on an SSH host.

For a model too big for this computer, or to validate with the host's onnxruntime: the engine's
venv is made or reused there (:func:`studio.runs.engine_env.ensure_engine`), the same
``studio convert`` the wizard would run here runs there (:mod:`studio.tools.convert.remote_args`),
and the converted model with its report comes back to the Output path. The result is the report a
local conversion returns, so the panel shows it the same way.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path

from studio.errors import UserError
from studio.jobs import CancelToken, Progress


def convert_on_host(context, host: str, options, cancel: CancelToken, aipp_path: Path | None = None,
                    aipp_text: str | None = None) -> Generator[Progress, None, object]:
    """Convert ``options.model`` with the engine on ``host``; returns the (localised) ConvertReport."""
    from studio.runs.engine_env import ensure_engine
    from studio.runs.engine_run import model_uploads, run_engine_command
    from studio.runs.where import target_for_host
    from studio.tools.convert.convert import ConvertReport, write_text_then
    from studio.tools.convert.remote_args import localize_report, remote_convert
    from studio.tools.deploy.fetch import folder_fetcher

    def run() -> Generator[Progress, None, object]:
        plan = remote_convert(options, model_uploads(Path(options.model)))
        remote = target_for_host(context, host)
        yield Progress(0.0, f"starting Studio's engine on {host}")
        env = yield from ensure_engine(remote, cancel)
        cancel.raise_if_cancelled()
        yield Progress(0.3, f"converting {Path(options.model).name} on {host}")
        result = yield from run_engine_command(remote, env, plan.args, plan.uploads, plan.dest,
                                               fetch=folder_fetcher(remote), cancel=cancel, ok_exit=(0, 1))
        data = localize_report(plan, options)
        if data is None:
            tail = "\n".join(result.stderr[-10:]) or result.stdout[-800:]
            raise UserError(f"The conversion on {host} wrote no report:\n{tail}", f"{host}:{result.work}",
                            "Read the host's message above; the same command runs here without a host.")
        known = set(ConvertReport.__dataclass_fields__)
        return ConvertReport(**{k: v for k, v in data.items() if k in known})

    # The wizard's AIPP config is written here first (it is the user's file, next to the output).
    return (yield from write_text_then(aipp_path, aipp_text, run()))
