"""Which ONNX Runtime execution providers the engines' sessions use (``--provider``).

One process-wide choice, made by the command line (``--provider NAME``, repeatable) before an
engine runs; every engine session asks :func:`chosen` instead of naming CPUExecutionProvider.
A provider this onnxruntime does not offer is refused with the list of those it does, and a
session that did not get the providers asked for is refused too: never a silent CPU fallback.
"""

from __future__ import annotations

from studio.core.errors import UserError

CPU = "CPUExecutionProvider"
_chosen: list[str] = []


def available() -> list[str]:
    """The execution providers of the installed onnxruntime."""
    import onnxruntime as ort

    return list(ort.get_available_providers())


def choose(names: list[str] | None) -> list[str]:
    """Use ``names`` (in order of preference) for the engines' sessions; empty/None = CPU only."""
    global _chosen
    names = [n for n in (names or []) if n]
    if names:
        have = available()
        for name in names:
            if name not in have:
                raise UserError(f"ONNX Runtime here has no {name}", f"--provider {name}",
                                "Use one of: " + ", ".join(have) + " (or install the onnxruntime build that has it, "
                                "e.g. onnxruntime-gpu for CUDAExecutionProvider).")
    _chosen = list(dict.fromkeys(names))
    return chosen()


def chosen() -> list[str]:
    """The providers for a new session: the chosen ones, CPU last (ONNX Runtime places ops the
    others cannot run there)."""
    return _chosen + ([CPU] if CPU not in _chosen else [])


def check(session) -> None:
    """Refuse a session that dropped a chosen provider (ONNX Runtime falls back to CPU quietly
    when, e.g., CUDA cannot start)."""
    got = set(session.get_providers())
    missing = [name for name in _chosen if name not in got]
    if missing:
        raise UserError(f"ONNX Runtime did not start {', '.join(missing)}; the session runs on "
                        f"{', '.join(session.get_providers())} only", "--provider " + " ".join(missing),
                        "Check the provider's libraries (CUDA/cuDNN, TensorRT ...) on this machine, or drop --provider.")


def open_session(model, providers: list[str] | None = None, options=None):
    """An ONNX Runtime session of ``model`` (a path) on ``providers`` (default: :func:`chosen`),
    with ``options`` (SessionOptions; warnings off either way); a model ONNX Runtime cannot load is
    a UserError saying why, without its C++ location."""
    import onnxruntime as ort

    from studio.core.ort_session import quiet_options

    try:
        session = ort.InferenceSession(str(model), quiet_options(options), providers=providers or chosen())
    except Exception as exc:  # ORT raises its own types for bad models
        from studio.core.model_files import check_external_data
        from studio.core.ortmsg import ort_message

        check_external_data(model)  # a missing weights file, said as every command says it
        raise UserError(f"ONNX Runtime cannot load the model: {ort_message(exc)}", model,
                        "Check the model with `studio info` or open it in the Graph panel.") from exc
    check(session)  # a provider ONNX Runtime dropped quietly is an error, not a CPU run
    return session


def describe() -> str:
    """How result headers name the device: ``CPU (CPUExecutionProvider)`` or the chosen list."""
    return "CPU (CPUExecutionProvider)" if not _chosen else ", ".join(chosen())
