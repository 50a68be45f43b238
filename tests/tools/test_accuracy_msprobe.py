"""msprobe dumps: read the real ones, compare them with msprobe's own rules, and agree with msprobe.

The ResNet pair (two training steps on a GPU) was compared with ``msprobe compare -tp step1 -gp
step0`` of mindstudio-probe 26.2.0 (with torch 2.13.0 CPU): 2,822 rows, 2,696 pass, 62 warning,
64 error. Those figures are written down here; where msprobe is importable, the live test below
compares every row's verdict with a fresh msprobe run.
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from studio.tools.accuracy.msprobe_compare import compare_msprobe
from studio.core.formats import detect
from studio.core.serial import to_json
from studio.tools.accuracy.msprobe_dump import read_msprobe
from studio.tools.accuracy.msprobe_result import read_msprobe_result

RESNET = "real/msprobe/quick_start_gpu_dump_resnet/gpu_dump"
LLM = "real/msprobe/cross_framework_llm_dump/dump_file"


@pytest.fixture
def resnet(ascend_fixtures) -> tuple[Path, Path]:
    root = ascend_fixtures / RESNET
    return root / "step0" / "proc2016" / "dump.json", root / "step1" / "proc2016" / "dump.json"


def test_reads_calls_arguments_stacks_and_modules(resnet):
    dump = read_msprobe(resnet[0])
    assert (dump.task, dump.framework, len(dump.calls)) == ("statistics", "pytorch", 760)
    conv = dump.by_name()["Functional.conv2d.0.forward"]
    slots = [t.slot.removeprefix(conv.name + ".") for t in conv.tensors]
    assert slots[:4] == ["input.0", "input.1", "input.2", "input.3.0"] and "output.0" in slots
    assert conv.tensors[0].shape == (32, 3, 224, 224) and conv.tensors[0].stats["Norm"] == pytest.approx(1267.7446)
    assert conv.tensors[3].scalar and conv.tensors[3].value == 2
    assert conv.module == "Module.conv1.Conv2d.forward.0"
    assert conv.stack and "conv.py" in conv.stack[1]
    grads = [t.slot for c in dump.calls if ".parameters_grad" in c.name for t in c.tensors]
    assert "Module.fc.Linear.parameters_grad.1.bias" not in grads  # step0 holds no gradient of fc yet
    assert dump.module_path("Functional.conv2d.0.forward") == ["Module.conv1.Conv2d.forward.0"]


def test_resnet_steps_give_msprobes_verdicts(resnet):
    result = compare_msprobe(*resnet)
    counts = {s: sum(1 for r in result.rows if r.result == s) for s in ("pass", "warning", "error")}
    assert (len(result.rows), counts) == (2822, {"pass": 2696, "warning": 62, "error": 64})
    assert len(result.pairs) == 760 and not result.unmatched_golden and not result.unmatched_target
    first = result.first_mismatch
    assert first["api"] == "Tensor.add_.0.forward" and first["result"] == "error"  # the step counter: 1 -> 2
    assert first["module"] == "Module.bn1.BatchNorm2d.forward.0" and first["stack"]
    # an independent check of one row: the output norm's relative error from the JSON alone
    data = [json.loads(p.read_text())["data"]["Functional.conv2d.0.forward"]["output"][0]["Norm"] for p in resnet]
    row = next(r for r in result.rows if r.target_api == "Functional.conv2d.0.forward" and r.slot == "output.0")
    assert row.norm_relative == pytest.approx(abs(data[1] - data[0]) / data[0])


def _dump(folder: Path, framework: str, calls: dict) -> Path:
    folder.mkdir(parents=True)
    (folder / "dump.json").write_text(json.dumps({"task": "statistics", "level": "L1", "framework": framework,
                                                  "dump_data_dir": None, "data": calls}))
    return folder


def _tensor(norm: float, dtype: str = "torch.float32", shape=(4,), top: float = 1.0) -> dict:
    return {"type": "torch.Tensor", "dtype": dtype, "shape": list(shape), "Max": top, "Min": -1.0, "Mean": 0.0,
            "Norm": norm, "requires_grad": False}


def test_the_rules_each_on_their_own(tmp_path):
    golden = {
        "Functional.relu.0.forward": {"input_args": [_tensor(1.0)], "output": [_tensor(1.0)]},
        "Torch.mul.0.forward": {"input_args": [_tensor(1.0), {"type": "float", "value": 2.0}], "output": [_tensor(2.0)]},
        "Torch.add.0.forward": {"input_args": [_tensor(1.0)], "output": [_tensor(1.0)]},
        "Tensor.to.0.forward": {"input_args": [_tensor(1.0)], "output": [_tensor(1.0)]},
        "Torch.exp.0.forward": {"input_args": [_tensor(1.0)], "output": [_tensor(1.0)]},
        "Torch.sum.0.forward": {"input_args": [_tensor(1.0)], "output": [_tensor(1.0)]},
    }
    target = json.loads(json.dumps(golden))
    target["Functional.relu.0.forward"]["output"][0]["Norm"] = 1.6          # output off by 60 %, inputs equal
    target["Torch.mul.0.forward"]["input_args"][1]["value"] = 3.0            # a scalar differs
    target["Torch.add.0.forward"]["output"][0]["dtype"] = "torch.float16"    # a dtype differs
    target["Tensor.to.0.forward"]["output"][0]["Norm"] = 9.0                 # `to` is not judged
    target["Torch.exp.0.forward"]["output"][0]["Max"] = float("inf")         # infinity on the target only
    target["Torch.sum.0.forward"]["output"][0]["Norm"] = 1.2                 # 20 % out, 0 % in: a warning
    result = compare_msprobe(_dump(tmp_path / "g", "pytorch", golden), _dump(tmp_path / "t", "pytorch", target))
    verdict = {r.target_api: r.result for r in result.rows if r.result != "pass"}
    assert verdict == {"Functional.relu.0.forward": "error", "Torch.mul.0.forward": "error",
                       "Torch.add.0.forward": "error", "Torch.exp.0.forward": "error", "Torch.sum.0.forward": "warning"}
    assert result.first_mismatch["api"] == "Functional.relu.0.forward"


def test_fuzzy_matching_and_an_api_mapping_across_frameworks(ascend_fixtures, tmp_path):
    pt, ms = ascend_fixtures / LLM / "pytorch_data", ascend_fixtures / LLM / "mindspore_data"
    plain = compare_msprobe(pt, ms)
    mapping = tmp_path / "map.yaml"
    mapping.write_text("Mint.logical_or: Tensor.__or__\nMint.cos: Torch.cos  # cosine\n"
                       "Functional.flash_attention_score: NPU.npu_fusion_attention\n")
    mapped = compare_msprobe(pt, ms, api_mapping=mapping)
    assert len(mapped.pairs) == len(plain.pairs) + 4  # logical_or, cos, flash attention forward and backward
    cos = [r for r in mapped.rows if r.target_api == "Mint.cos.0.forward"]
    assert cos and cos[0].golden_api == "Torch.cos.0.forward"
    # MindSpore's Float32 is PyTorch's torch.float32: no dtype error across frameworks
    assert not any("dtype" in r.message for r in cos)


def test_cli_names_the_first_mismatch(resnet, tmp_path):
    done = subprocess.run([sys.executable, "-m", "studio", "compare", str(resnet[0]), str(resnet[1].parent), "--json",
                           "-o", str(tmp_path / "r.csv")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["first_mismatch"]["api"] == "Tensor.add_.0.forward" and data["error"] == 64
    with open(tmp_path / "r.csv", newline="") as handle:
        assert sum(1 for _ in csv.reader(handle)) == 2823
    # both CSVs the command wrote open again, with the comparison's verdicts and first mismatch
    for written in (tmp_path / "r.csv", tmp_path / "r.msprobe.csv"):
        assert detect(written).format.id == "msprobe_result"
        back = to_json(read_msprobe_result(written))
        assert (back["pass"], back["warning"], back["error"]) == (data["pass"], data["warning"], data["error"])
        assert back["apis_matched"] == data["apis_matched"] == 760
        assert (back["first_mismatch"]["api"], back["first_mismatch"]["slot"]) == ("Tensor.add_.0.forward", "output.0")


def test_msprobe_step_folders_stand_for_their_one_rank(ascend_fixtures):
    root = ascend_fixtures / RESNET
    done = subprocess.run([sys.executable, "-m", "studio", "compare", str(root / "step0"), str(root / "step1"),
                           "--json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["error"] == 64
    assert "step0/proc2016/dump.json" in done.stderr
    refused = subprocess.run([sys.executable, "-m", "studio", "compare", str(root), str(root)],
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert "2 steps (step0, step1)" in refused.stderr and "step0" in refused.stderr.split("fix:")[1]


def test_the_2023_compare_result_opens_with_its_own_verdicts(ascend_fixtures):
    path = ascend_fixtures / "real/msprobe/compare_result_legacy/compare_result_20230703104808.csv"
    with open(path, newline="", encoding="utf-8-sig") as handle:
        table = list(csv.DictReader(handle))
    result = read_msprobe_result(path)
    assert detect(path).format.id == "msprobe_result"
    assert [f"{r.target_api}_{r.slot}" for r in result.rows] == [row["NPU Name"] for row in table]
    assert [r.tensor["Cosine"] for r in result.rows] == [float(row["Cosine"]) for row in table]
    expected = ["pass" if row["Accuracy Reached or Not"].lower() == "yes" else "error" for row in table]
    assert [r.result for r in result.rows] == expected
    assert result.tensor_mode and len({r.target_api for r in result.rows}) == 3


# The test extra installs msprobe into this interpreter's environment, whose bin folder need not be on PATH.
_BESIDE = Path(sys.executable).with_name("msprobe")
MSPROBE = str(_BESIDE) if _BESIDE.exists() else shutil.which("msprobe")


@pytest.mark.skipif(MSPROBE is None, reason="msprobe (mindstudio-probe with torch) is not installed")
def test_every_verdict_equals_a_live_msprobe_run(resnet, tmp_path):
    subprocess.run([MSPROBE, "compare", "-tp", str(resnet[1]), "-gp", str(resnet[0]), "-o", str(tmp_path)],
                   check=True, capture_output=True, timeout=600)
    written = next(tmp_path.glob("*.csv"))
    table = list(csv.DictReader(open(written)))
    theirs = {r["NPU Name"]: r["Result"] for r in table}
    ours = {f"{r.target_api}.{r.slot}": r.result for r in compare_msprobe(*resnet).rows}
    assert ours == theirs
    # msprobe's own file opens in Studio with msprobe's verdicts row for row; the arguments msprobe
    # left unpaired (golden side N/A: the gradients of another step's parameters) are target-only calls
    back = read_msprobe_result(written)
    assert detect(written).format.id == "msprobe_result"
    paired = {r["NPU Name"]: r["Result"] for r in table if r["Bench Name"] != "N/A"}
    assert {f"{r.target_api}.{r.slot}": r.result for r in back.rows} == paired
    unpaired = {r["NPU Name"] for r in table if r["Bench Name"] == "N/A"}
    assert unpaired and {n.rsplit(".", 2)[0] for n in unpaired} == set(back.unmatched_target)
