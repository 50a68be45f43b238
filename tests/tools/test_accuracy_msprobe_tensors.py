"""msprobe tensor dumps: tensors read safely without torch, msprobe's six metrics and rules, its CSV layout.

The dump pair is made here (tests/tools/msprobe_tensor_helpers.py): a small torch network run in
FP32 (golden) and in BF16 (target, ``.pt`` files) or FP16 (target, MindSpore-style ``.npy``).
Where mindstudio-probe is installed (a test-only dependency) msprobe's own compare runs on the
same pair and every cell must agree to 1e-6; the metrics are also checked against torch.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from msprobe_tensor_helpers import make_pair  # noqa: E402

from studio.core.errors import UserError  # noqa: E402
from studio.tools.accuracy.msprobe_compare import compare_msprobe  # noqa: E402
from studio.tools.accuracy.msprobe_csv import write_msprobe_csv  # noqa: E402
from studio.tools.accuracy.metrics import NUMPY_ONLY_ENV  # noqa: E402
from studio.tools.accuracy.msprobe_metrics import COLUMNS  # noqa: E402
from studio.tools.accuracy.pt_tensor import read_pt_tensor  # noqa: E402

RESNET = "real/msprobe/quick_start_gpu_dump_resnet/gpu_dump"
MS_RUNNER = Path(__file__).with_name("msprobe_ms_compare.py")


def _msprobe() -> str | None:
    """msprobe's command beside this Python (the venv's bin is not always on PATH)."""
    script = Path(sys.executable).with_name("msprobe")
    if not script.is_file():
        return None
    done = subprocess.run([sys.executable, "-c", "import msprobe.core.compare.acc_compare"], capture_output=True)
    return str(script) if done.returncode == 0 else None


MSPROBE = _msprobe()
needs_msprobe = pytest.mark.skipif(MSPROBE is None, reason="mindstudio-probe (test extra) cannot import here")


@pytest.fixture(scope="module")
def pairs(tmp_path_factory) -> dict[str, tuple[Path, Path]]:
    root = tmp_path_factory.mktemp("msprobe_tensor")
    return {"pt": make_pair(root / "pt", "bfloat16", "pytorch"), "npy": make_pair(root / "npy", "float16", "mindspore")}


def _msprobe_rows(target: Path, golden: Path, out: Path, mindspore: bool) -> list[dict]:
    command = [sys.executable, str(MS_RUNNER), str(target), str(golden), str(out)] if mindspore else \
        [MSPROBE, "compare", "-tp", str(target), "-gp", str(golden), "-o", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    with open(next(out.glob("compare_result_*.csv")), newline="") as handle:
        return list(csv.DictReader(handle))


def _same(mine: str, theirs: str) -> bool:
    if mine == theirs:
        return True
    try:
        a, b = float(mine.rstrip("%")), float(theirs.rstrip("%"))
    except ValueError:
        return False
    return mine.endswith("%") == theirs.endswith("%") and abs(a - b) <= 1e-6 * max(1.0, abs(b))


def test_pt_reader_gives_torchs_values_without_torch_code(tmp_path):
    cases = [torch.arange(6, dtype=torch.bfloat16).reshape(2, 3)[:, 1:], torch.randn(3, 4).t(), torch.tensor(3.5),
             torch.ones(0, 3), torch.tensor([True, False]), torch.nn.Parameter(torch.randn(2, 2)),
             torch.randn(5).half(), torch.arange(4, dtype=torch.int64), torch.tensor(2.5, dtype=torch.bfloat16)]
    for number, tensor in enumerate(cases):
        path = tmp_path / f"{number}.pt"
        torch.save(tensor, path)
        array = read_pt_tensor(path)
        expected = tensor.detach().float().numpy() if tensor.dtype == torch.bfloat16 else tensor.detach().numpy()
        assert isinstance(array, np.ndarray) and array.shape == expected.shape and array.dtype == expected.dtype
        assert np.array_equal(array, expected)


class _Payload:
    """Pickles as ``exec(code)``: loading it with torch.load(weights_only=False) writes a file."""

    def __init__(self, marker: Path):
        self.code = f"open({str(marker)!r}, 'w').write('ran')"

    def __reduce__(self):
        return exec, (self.code,)


def test_a_pt_holding_pickled_objects_is_refused_without_running_it(tmp_path):
    marker = tmp_path / "ran.txt"
    evil = tmp_path / "evil.pt"
    torch.save({"tensor": torch.ones(2), "x": _Payload(marker)}, evil)
    with pytest.raises(UserError) as caught:
        read_pt_tensor(evil)
    assert caught.value.what.endswith(".exec") and str(evil) == caught.value.where
    assert not marker.exists()
    torch.save({"a": torch.ones(2)}, tmp_path / "dict.pt")  # no foreign global, but not one tensor
    with pytest.raises(UserError, match="holds a dict"):
        read_pt_tensor(tmp_path / "dict.pt")
    # the payload is live: torch's unrestricted load runs it (the check above can fail)
    torch.load(evil, weights_only=False)
    assert marker.read_text() == "ran"


def test_tensor_metrics_against_torch(pairs):
    golden, target = pairs["pt"]
    result = compare_msprobe(golden, target)
    row = next(r for r in result.rows if r.target_api == "Functional.linear.0.forward" and r.slot == "output.0")
    g = torch.load(golden.parent / "dump_tensor_data" / row.golden.data_name).double().flatten()
    t = torch.load(target.parent / "dump_tensor_data" / row.target.data_name).double().flatten()
    assert row.tensor["Cosine"] == pytest.approx(float(torch.nn.functional.cosine_similarity(g, t, dim=0)), abs=1e-6)
    assert row.tensor["EucDist"] == pytest.approx(float((g - t).norm()), rel=1e-9)
    assert row.tensor["MaxAbsErr"] == pytest.approx(float((g - t).abs().max()), abs=1e-9)
    relative = ((t - g) / g).abs()  # no zero in this golden tensor
    assert row.tensor["MaxRelativeErr"] == pytest.approx(float(relative.max()), rel=1e-5)
    assert row.tensor["One Thousandth Err Ratio"] == pytest.approx(float((relative < 0.001).double().mean()))
    assert row.tensor["Five Thousandths Err Ratio"] == pytest.approx(float((relative < 0.005).double().mean()))


def test_tensor_rules(pairs):
    result = compare_msprobe(*pairs["pt"])
    assert result.tensor_mode and not result.unreadable
    by = {(r.target_api, r.slot): r for r in result.rows}
    sin, cos = by[("Torch.sin.0.forward", "output.0")], by[("Torch.cos.0.forward", "output.0")]
    assert sin.result == "error" and "one-thousandth" in sin.message
    assert cos.result == "error" and "cosine drops" in cos.message
    assert by[("Torch.sin.0.forward", "input.0")].result == "pass"
    assert by[("Torch.abs.0.forward", "output.0")].tensor["Cosine"] == "N/A"  # NaN on the target only
    assert by[("Torch.mean.0.forward", "output.0")].tensor["Cosine"] == "unsupported"  # 0-d
    assert by[("Torch.zeros_like.0.forward", "output.0")].tensor["Cosine"] == 1.0
    assert by[("Torch.mul.0.forward", "input.1")].tensor == {c: "unsupported" for c in COLUMNS}  # a scalar


@needs_msprobe
@pytest.mark.parametrize("kind", ["pt", "npy"])
def test_every_cell_equals_msprobes_own_compare(pairs, kind, tmp_path, monkeypatch):
    """Both the compiled kernel (where numba imports) and the numpy fallback give msprobe's cells."""
    golden, target = pairs[kind]
    theirs = _msprobe_rows(target, golden, tmp_path / "msprobe", mindspore=kind == "npy")
    for numpy_only in ("0", "1"):
        monkeypatch.setenv(NUMPY_ONLY_ENV, numpy_only)
        result = compare_msprobe(golden, target, fuzzy=False)
        write_msprobe_csv(result, tmp_path / "mine.csv")
        with open(tmp_path / "mine.csv", newline="") as handle:
            mine = list(csv.DictReader(handle))
        assert len(mine) == len(theirs) == 49 and list(mine[0]) == list(theirs[0])
        for ours, their in zip(mine, theirs):
            for column in ours:
                if column != "Err_message":  # the reasons are in Studio's words
                    assert _same(ours[column], their[column]), (numpy_only, ours["NPU Name"], column, ours[column],
                                                                their[column])


@needs_msprobe
def test_resnet_csv_equals_msprobes(ascend_fixtures, tmp_path):
    root = ascend_fixtures / RESNET
    golden, target = root / "step0" / "proc2016" / "dump.json", root / "step1" / "proc2016" / "dump.json"
    theirs = _msprobe_rows(target, golden, tmp_path / "msprobe", mindspore=False)
    write_msprobe_csv(compare_msprobe(golden, target, fuzzy=False), tmp_path / "mine.csv")
    with open(tmp_path / "mine.csv", newline="") as handle:
        mine = list(csv.DictReader(handle))
    assert len(mine) == len(theirs) == 2822
    for ours, their in zip(mine, theirs):
        for column in ours:
            if column != "Err_message":
                assert _same(ours[column], their[column]), (ours["NPU Name"], column, ours[column], their[column])


def test_truncated_tensor_named_and_nothing_written_beside_the_dumps(pairs, tmp_path):
    import shutil

    golden, target = pairs["pt"]
    copy = tmp_path / "target"
    shutil.copytree(target.parent, copy)
    victim = copy / "dump_tensor_data" / "Functional.relu.0.forward.output.0.pt"
    victim.write_bytes(victim.read_bytes()[:200])
    npy_golden, npy_target = pairs["npy"]
    npy_copy = tmp_path / "npy_target"
    shutil.copytree(npy_target.parent, npy_copy)
    npy_victim = npy_copy / "dump_tensor_data" / "Functional.relu.0.forward.output.0.npy"
    npy_victim.write_bytes(npy_victim.read_bytes()[:150])
    before = sorted(p for p in tmp_path.rglob("*")) + sorted(golden.parent.rglob("*"))
    out = tmp_path / "out"
    out.mkdir()
    for g, t, bad in ((golden, copy, victim), (npy_golden, npy_copy, npy_victim)):
        done = subprocess.run([sys.executable, "-m", "studio", "compare", str(g), str(t), "--json",
                               "-o", str(out / "r.csv")], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        data = json.loads(done.stdout)
        assert [u["file"] for u in data["unreadable"]] == [str(bad)]
        row = next(r for r in data["rows"] if r["target_api"] == "Functional.relu.0.forward" and r["slot"] == "output.0")
        assert row["result"] == "error" and str(bad) in row["message"]
    after = sorted(p for p in tmp_path.rglob("*") if out not in p.parents and p != out) + \
        sorted(golden.parent.rglob("*"))
    assert after == [p for p in before if p != out]
    assert sorted(p.name for p in out.iterdir()) == ["r.csv", "r.msprobe.csv"]


def _two_ranks(root: Path, perturb: bool) -> Path:
    """Two ranks (procNNNN folders, as msprobe names them without a rank) around one all_reduce;
    ``perturb``: rank 1's all_reduce input is three times what it should be (a bug between its linear and
    the all_reduce)."""
    from msprobe_tensor_helpers import Recorder

    gen = torch.Generator().manual_seed(3)
    xs = [torch.randn(4, 8, generator=gen) for _ in range(2)]
    weight = torch.randn(8, 8, generator=gen)
    hidden = [torch.nn.functional.linear(x, weight) for x in xs]
    sent = [h * 3.0 if perturb and rank == 1 else h for rank, h in enumerate(hidden)]
    total = sent[0] + sent[1]
    for rank in range(2):
        recorder = Recorder(root / "step0" / f"proc{1000 + rank}", "pytorch")
        recorder.call("Functional.linear", torch.nn.functional.linear, xs[rank], weight)
        recorder.call("Distributed.all_reduce", lambda t: total.clone(), sent[rank])
        recorder.call("Functional.relu", torch.relu, total)
        recorder.write(task="statistics")
    return root


def test_first_divergence_across_ranks_names_the_perturbed_rank(tmp_path):
    golden, target = _two_ranks(tmp_path / "golden", False), _two_ranks(tmp_path / "target", True)
    done = subprocess.run([sys.executable, "-m", "studio", "compare", str(golden), str(target), "--ranks", "--json"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["first"]["rank"] == "proc1001" and data["first"]["api"] == "Distributed.all_reduce.0.forward"
    assert data["first"]["phase"] == "before communication" and data["first"]["communications_before"] == 0
    others = {r["rank"]: r for r in data["ranks"]}
    assert others["proc1000"]["phase"] == "during communication"  # rank 0 received the difference
    # msprobe's -da rule looks at outputs only: both ranks' all_reduce outputs, the lower rank first
    done = subprocess.run([sys.executable, "-m", "studio", "compare", str(golden), str(target), "--ranks", "--json",
                           "--divergence-rule", "msprobe"], capture_output=True, text=True, timeout=120)
    data = json.loads(done.stdout)
    assert [r["phase"] for r in data["ranks"]] == ["during communication"] * 2
    assert data["first"]["rank"] == "proc1000"
