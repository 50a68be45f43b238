"""Test helpers: a small torch network run in FP32 and in BF16/FP16, dumped in msprobe's tensor layout.

The layout is msprobe's (``task: tensor``): ``dump.json`` with each argument's dtype, shape,
Max/Min/Mean/Norm, ``requires_grad`` and ``data_name``, and the tensors themselves in
``dump_tensor_data/`` beside it — ``.pt`` written by ``torch.save`` for PyTorch, ``.npy`` for
MindSpore. Every API call goes through :class:`Recorder`, which names calls and slots as
msprobe does (``Functional.linear.0.forward``, ``...input.0.pt``, keyword arguments by name).

The network holds the cases msprobe's rules treat apart: scalar and ``None`` arguments, keyword
tensors, a 0-d output, a ``[4, 1]`` output (squeezed), an all-zero output, ``-inf`` at the same
places on both sides, a NaN on the target only, integer and boolean tensors, and two calls the
target gets wrong on purpose (inputs equal, output off: msprobe's one-thousandth error and cosine
warning rules).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

MS_DTYPES = {"torch.float32": "Float32", "torch.float16": "Float16", "torch.bfloat16": "BFloat16",
             "torch.int64": "Int64", "torch.bool": "Bool"}


class Recorder:
    """Runs API calls and writes them the way msprobe's tensor dump does."""

    def __init__(self, folder: Path, framework: str):
        self.folder = folder
        self.framework = framework
        self.data_dir = folder / "dump_tensor_data"
        self.data_dir.mkdir(parents=True)
        self.data: dict = {}
        self.counts: dict[str, int] = {}

    def call(self, api: str, fn, *args, **kwargs):
        """Run ``fn(*args, **kwargs)`` as the API ``api`` (``Functional.linear``) and record it."""
        number = self.counts.get(api, 0)
        self.counts[api] = number + 1
        name = f"{api}.{number}.forward"
        out = fn(*args, **kwargs)
        record = {"input_args": [self._arg(a, f"{name}.input.{i}") for i, a in enumerate(args)],
                  "input_kwargs": {k: self._arg(v, f"{name}.input.{k}") for k, v in kwargs.items()},
                  "output": [self._arg(out, f"{name}.output.0")]}
        self.data[name] = record
        return out

    def write(self, task: str = "tensor") -> Path:
        """dump.json (and an empty stack.json / construct.json as msprobe writes them)."""
        dump = {"task": task, "level": "L1", "framework": self.framework,
                "dump_data_dir": str(self.data_dir), "data": self.data}
        (self.folder / "dump.json").write_text(json.dumps(dump, indent=1))
        (self.folder / "stack.json").write_text("{}")
        (self.folder / "construct.json").write_text("{}")
        return self.folder / "dump.json"

    def _arg(self, value, slot: str):
        import torch

        if value is None:
            return None
        if isinstance(value, (list, tuple)):
            return [self._arg(v, f"{slot}.{i}") for i, v in enumerate(value)]
        if isinstance(value, bool):
            return {"type": "bool", "value": value}
        if isinstance(value, int):
            return {"type": "int", "value": value}
        if isinstance(value, float):
            return {"type": "float", "value": value}
        assert isinstance(value, torch.Tensor)
        stats = _stats(value)
        dtype = str(value.dtype)
        if self.framework == "pytorch":
            data_name = slot + ".pt"
            torch.save(value.detach().clone(), self.data_dir / data_name)
            entry = {"type": "torch.Tensor", "dtype": dtype}
        else:
            data_name = slot + ".npy"
            np.save(self.data_dir / data_name, value.detach().numpy())
            entry = {"type": "mindspore.Tensor", "dtype": MS_DTYPES[dtype]}
        entry.update({"shape": list(value.shape), **stats, "requires_grad": bool(value.requires_grad),
                      "data_name": data_name})
        return entry


def _stats(tensor) -> dict:
    import torch

    if tensor.dtype == torch.bool:
        return {"Max": bool(tensor.max()), "Min": bool(tensor.min()), "Mean": None, "Norm": None}
    data = tensor.detach().double()
    # json writes non-finite values as Infinity / NaN, as msprobe's dump does
    return {key: float(v) for key, v in (("Max", data.max()), ("Min", data.min()), ("Mean", data.mean()),
                                         ("Norm", data.norm()))}


def run_network(recorder: Recorder, dtype, wrong: bool) -> None:
    """The network: the same seeded weights and input, computed in ``dtype``; ``wrong`` (the target)
    also puts a NaN where the golden side has none and gets two calls wrong."""
    import torch
    import torch.nn.functional as F

    gen = torch.Generator().manual_seed(7)
    x = torch.randn(4, 16, generator=gen)
    w1, b1 = torch.randn(32, 16, generator=gen) * 0.25, torch.randn(32, generator=gen) * 0.1
    w2, b2 = torch.randn(8, 32, generator=gen) * 0.25, torch.randn(8, generator=gen) * 0.1
    angles = torch.linspace(-3, 3, 64, dtype=torch.float32)
    noise = torch.randn(64, generator=gen)
    x, w1, b1, w2, b2 = (t.to(dtype) for t in (x, w1, b1, w2, b2))
    r = recorder.call
    h = r("Functional.linear", F.linear, x, w1, b1)
    h = r("Functional.relu", F.relu, h)
    h2 = r("Functional.linear", F.linear, h, w2, bias=b2)
    r("Torch.mul", torch.mul, h2, 0.5)
    r("Functional.layer_norm", F.layer_norm, h2, [8], None, None, 1e-5)
    r("Torch.sum", torch.sum, h2, 1, True)                       # [4, 1]: squeezed to [4]
    r("Torch.mean", torch.mean, h2)                              # 0-d
    r("Torch.reshape", torch.reshape, r("Torch.sum", torch.sum, x), (1,))  # [1]: one element
    r("Functional.softmax", F.softmax, h2, dim=-1)
    r("Torch.zeros_like", torch.zeros_like, h2)                  # all zero on both sides
    r("Torch.log", torch.log, h)                                 # -inf where relu gave 0
    r("Torch.gt", torch.gt, h2, 0.0)                             # bool
    r("Torch.argmax", torch.argmax, h2, 1)                       # int64
    bad = h2.clone()
    if wrong:
        bad[0, 0] = float("nan")
    r("Torch.abs", torch.abs, bad)                               # NaN on the target only
    # the same FP32 input on both sides, the output off on the target: a kernel gone wrong
    r("Torch.sin", lambda a: torch.sin(a) + (1e-2 * noise if wrong else 0), angles)
    r("Torch.cos", lambda a: noise if wrong else torch.cos(a), angles)


def make_pair(root: Path, target_dtype: str = "bfloat16", framework: str = "pytorch") -> tuple[Path, Path]:
    """Write the golden (FP32) and target dumps under ``root``; return both dump.json paths."""
    import torch

    golden = Recorder(root / "golden" / "step0" / "rank0", framework)
    run_network(golden, torch.float32, wrong=False)
    target = Recorder(root / "target" / "step0" / "rank0", framework)
    run_network(target, getattr(torch, target_dtype), wrong=True)
    return golden.write(), target.write()
