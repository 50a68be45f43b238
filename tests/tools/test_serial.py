"""The one serialiser: its rules on plain dataclasses, and a round trip of every result class
(``from_json(cls, to_json(x)) == x``) on instances made from real inputs where the engine is cheap
enough to run here (the demo workspace, the Ascend fixtures)."""

from __future__ import annotations

import enum
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from studio.core.errors import UserError
from studio.core.jobs import run_job
from studio.core.serial import from_json, named_table, to_json


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclass
class Leaf:
    value: float
    where: Path
    shape: tuple[int, ...] = ()


@dataclass
class Tree:
    leaf: Leaf
    leaves: list[Leaf] = field(default_factory=list)
    by_index: dict[int, Leaf | None] = field(default_factory=dict)
    colour: Colour = Colour.RED
    pair: tuple[int, str] | None = None
    note: str | None = None


@dataclass
class Shaped:
    """Renamed, rounded, left out, omitted when empty, and a derived key."""

    name: str
    seconds: float
    cache: dict = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)

    __json_rename__ = {"name": "title"}
    __json_round__ = {"seconds": 2}
    __json_skip__ = ("cache",)
    __json_omit_empty__ = ("tags",)
    __json_extra__ = {"loud": "shout"}

    def shout(self) -> str:
        return self.name.upper()


def assert_round_trip(obj):
    """``obj`` survives the trip through JSON text (and NaN, which equals nothing, survives as NaN)."""
    data = json.loads(json.dumps(to_json(obj), allow_nan=False))  # strict JSON: no NaN / Infinity literals
    back = from_json(type(obj), data)
    assert type(back) is type(obj)
    assert to_json(back) == data
    if "nan" not in json.dumps(data):
        assert back == obj
    return back


def test_nested_dataclasses_paths_tuples_enums_and_int_keys_round_trip():
    tree = Tree(Leaf(1.5, Path("/a/b.onnx"), (1, 3, 224, 224)), [Leaf(2.0, Path("rel/x.npy"))],
                {3: None, 7: Leaf(-0.25, Path("c"))}, Colour.BLUE, (4, "four"))
    data = to_json(tree)
    assert data["leaf"] == {"value": 1.5, "where": "/a/b.onnx", "shape": [1, 3, 224, 224]}
    assert data["by_index"]["3"] is None and data["colour"] == "blue" and data["pair"] == [4, "four"]
    back = assert_round_trip(tree)
    assert isinstance(back.leaf.where, Path) and back.leaf.shape == (1, 3, 224, 224) and back.pair == (4, "four")


def test_nan_and_infinities_are_written_as_text_and_read_back_as_floats():
    tree = Tree(Leaf(math.nan, Path("n")), [Leaf(math.inf, Path("i")), Leaf(-math.inf, Path("j"))])
    data = to_json(tree)
    assert [data["leaf"]["value"], data["leaves"][0]["value"], data["leaves"][1]["value"]] == ["nan", "inf", "-inf"]
    back = assert_round_trip(tree)
    assert math.isnan(back.leaf.value) and back.leaves[0].value == math.inf and back.leaves[1].value == -math.inf


def test_numpy_scalars_and_arrays_become_plain_numbers_and_lists():
    data = to_json({"f": np.float32(0.5), "i": np.int64(7), "b": np.bool_(True), "a": np.arange(4).reshape(2, 2),
                    "n": np.array([np.nan, 1.0])})
    assert data == {"f": 0.5, "i": 7, "b": True, "a": [[0, 1], [2, 3]], "n": ["nan", 1.0]}
    assert type(data["i"]) is int and type(data["b"]) is bool
    json.dumps(data, allow_nan=False)


def test_class_settings_rename_round_skip_omit_and_derive():
    shaped = Shaped("conv", 1.23456, {"big": 1})
    assert to_json(shaped) == {"title": "conv", "seconds": 1.23, "loud": "CONV"}
    assert to_json(Shaped("x", 0.0, tags=["a"]))["tags"] == ["a"]
    back = from_json(Shaped, {"title": "conv", "seconds": 1.23, "loud": "ignored"})
    assert back == Shaped("conv", 1.23)


def test_a_missing_key_is_a_user_error_naming_class_and_key():
    with pytest.raises(UserError) as caught:
        from_json(Leaf, {"where": "x"})
    assert "Leaf" in str(caught.value) and "'value'" in str(caught.value)
    with pytest.raises(UserError):
        from_json(Tree, ["not", "an", "object"])


def test_an_unknown_type_says_which_and_how_to_fix():
    with pytest.raises(TypeError, match="object.*__json__"):
        to_json(object())


# --- every result class ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    from studio.tools.demo.workspace import ensure_demo_workspace

    folder = tmp_path_factory.mktemp("serial") / "demo"
    run_job(ensure_demo_workspace(folder))  # with the tools' outputs (advisor report, profile)
    return folder


def test_ab_change_round_trips():
    from studio.core import ab

    rng = np.random.default_rng(3)
    change = ab.compare_samples(rng.lognormal(0.0, 0.05, 300), rng.lognormal(-0.2, 0.05, 300))
    back = assert_round_trip(change)
    assert back.describe() == change.describe()


def test_advisor_report_round_trips_from_the_demo_report(demo):
    from studio.tools.advisor.model import Finding, Report, RooflinePoint

    data = json.loads((demo / "advisor" / "unet_report.json").read_text(encoding="utf-8"))
    report = from_json(Report, data)
    assert report.findings and report.roofline and isinstance(report.findings[0], Finding)
    assert isinstance(report.roofline[0], RooflinePoint)
    assert_round_trip(report)
    for finding in report.findings:
        assert_round_trip(finding)
    assert set(to_json(report)) >= {"format", "summary", "findings", "roofline", "performance"}


def test_advisor_applied_loop_device_and_msprof_analyze_round_trip(demo, tmp_path):
    from studio.core import ab
    from studio.tools.advisor.devices import BUILTIN
    from studio.tools.advisor.fixes import MISH_TO_LEAKY_RELU, apply_fixes
    from studio.tools.advisor.loop import LoopResult, change_text
    from studio.tools.advisor.msprof_analyze import MsprofAnalyzeRun

    applied = run_job(apply_fixes(demo / "models" / "mish_cnn.onnx", tmp_path / "fixed.onnx", [MISH_TO_LEAKY_RELU],
                                  allow_accuracy_change=True))
    assert applied.swapped
    assert_round_trip(applied)
    change = ab.compare_samples([1.0, 1.1, 0.9, 1.05] * 10, [0.8, 0.85, 0.82, 0.79] * 10)
    loop = LoopResult(str(demo / "models" / "mish_cnn.onnx"), str(tmp_path / "fixed.onnx"), applied,
                      {"p50": 1.2}, {"p50": 0.9}, outputs=[{"output": "probabilities", "passed": True}], change=change)
    data = assert_round_trip(loop)
    assert to_json(loop)["speedup"] == pytest.approx(change.speedup) and change_text(to_json(data)) == change.describe()
    for device in BUILTIN:
        assert_round_trip(device)
    run = MsprofAnalyzeRun(True, "/usr/bin/msprof-analyze", True, "ok", [], "a.html", None, 1.25, "/tmp/out")
    assert_round_trip(run)


def test_accuracy_comparison_parts_round_trip(demo):
    from studio.tools.accuracy.advisor import Finding
    from studio.tools.accuracy.compare import compare_dumps
    from studio.tools.accuracy.metrics import Metrics, Thresholds

    result = run_job(compare_dumps(demo / "accuracy" / "unet_fp32", demo / "accuracy" / "unet_fp16sim"))
    assert result.findings and result.compared
    for finding in result.findings:
        assert isinstance(assert_round_trip(finding), Finding)
    assert_round_trip(result.thresholds)
    for row in result.compared[:5]:
        assert isinstance(assert_round_trip(row.metrics), Metrics)
    data = to_json(result)  # the --json view of the whole comparison (one way: rows flatten the tensors)
    assert data["thresholds"] == to_json(Thresholds()) and len(data["rows"]) == len(result.rows)


def test_accuracy_reduction_and_precision_results_round_trip(demo, tmp_path):
    from studio.tools.accuracy.precision import PrecisionResult
    from studio.tools.accuracy.reduce import reduce_fp16

    reduction = run_job(reduce_fp16(demo / "models" / "fp16_frontend.onnx", tmp_path / "repro",
                                    inputs={"frames": np.load(demo / "inputs" / "frames_with_silence.npy")}))
    assert to_json(reduction)["repro_ops"] == len(reduction.ops)
    assert_round_trip(reduction)
    found = PrecisionResult(["mel", "log"], ["MatMul", "Log"], 12, 9, True, {"log_mel": "fail"},
                            {"log_mel": "pass"}, tmp_path / "precision")
    assert set(to_json(found)) >= {"keep_fp32", "op_types", "folder"}
    assert_round_trip(found)


def test_profiler_comparison_stats_cluster_and_memory_round_trip(demo, ascend_fixtures):
    from studio.tools.profiler import stats
    from studio.tools.profiler.cluster import open_cluster
    from studio.tools.profiler.compare import compare
    from studio.tools.profiler.loader import open_profile
    from studio.tools.profiler.memory.engine import open_memory

    trace = run_job(open_profile(demo / "profiles" / "unet_cpu", use_cache=False))
    comparison = compare(trace, trace)
    assert comparison.ops and to_json(comparison)["ops"][0]["status"] == "both"
    assert_round_trip(comparison)
    for row in stats.by_name(trace)[:20]:
        assert_round_trip(row)
    real = ascend_fixtures / "real"
    assert_round_trip(open_cluster(real / "cluster_pytorch" / "msinsight_text_2rank_level2"))
    assert_round_trip(open_memory(real / "memory" / "msinsight_static_op_mem"))


def test_cluster_step_rows_round_trip(ascend_fixtures):
    from studio.tools.profiler.cluster.discover import find_ranks
    from studio.tools.profiler.cluster.step_time import read_rank_steps

    ranks = find_ranks(ascend_fixtures / "real" / "cluster_pytorch" / "msinsight_text_2rank_level2")
    rows = read_rank_steps(ranks.ranks[0], [])
    assert rows
    for row in rows:
        assert_round_trip(row)


def test_bench_result_and_pair_round_trip(demo):
    from studio.tools.bench.ort_bench import bench_model
    from studio.tools.bench.with_reference import BenchPair

    result = run_job(bench_model(demo / "models" / "classifier.onnx", loop=5, warmup=1))
    assert len(result.latencies_ms) == 5
    back = assert_round_trip(result)
    assert back.compute == result.compute
    pair = BenchPair(result, back)
    data = to_json(pair)
    assert set(data) >= {"compare_with", "comparison", "change"}
    assert from_json(BenchPair, data) == pair


def test_conversion_results_round_trip(demo, tmp_path):
    import onnx

    from studio.tools.convert.atc_log import parse_atc_output
    from studio.ops.atc import AtcResult
    from studio.tools.convert.convert import ConvertReport, convert_model
    from studio.tools.convert.fp16 import convert_to_fp16
    from studio.tools.convert.options import ConvertOptions
    from studio.tools.convert.passes.context import Fusion
    from studio.tools.convert.rewrite import PassRun
    from studio.tools.convert.validate import OutputComparison, Validation, validate

    options = ConvertOptions(model=demo / "models" / "unet.onnx", output=tmp_path / "unet_c.onnx", validate=True,
                             validate_inputs={"image": demo / "inputs" / "unet_image.npy"})
    assert_round_trip(options)
    report = run_job(convert_model(options))
    assert report.fusions and report.pass_runs and report.validation
    assert isinstance(assert_round_trip(report), ConvertReport)
    fusion = from_json(Fusion, report.fusions[0])
    assert to_json(fusion) == report.fusions[0]
    run = from_json(PassRun, report.pass_runs[0])
    assert to_json(run) == report.pass_runs[0]
    validation = from_json(Validation, report.validation)
    assert isinstance(validation.outputs[0], OutputComparison) and to_json(validation) == report.validation
    original = onnx.load(demo / "models" / "classifier.onnx")
    converted = onnx.load(demo / "models" / "classifier.onnx")
    fp16 = convert_to_fp16(converted)
    assert "underflow_to_zero" in to_json(fp16)
    assert_round_trip(fp16)
    assert_round_trip(validate(original, onnx.load(demo / "models" / "classifier.onnx")))
    messages = parse_atc_output("ATC run failed, Please check the detail log, Try 'atc --help' for more information\n"
                                "E10001: Value [abc] for parameter [--input_shape] is invalid. Reason: format error\n")
    assert any(m.code == "E10001" for m in messages)
    atc = AtcResult("npu-host", "/home/me/studio-atc/20240101-unet", ["atc", "--model=unet.onnx"], 1,
                    "E10001 ...", None, messages)
    assert set(to_json(atc)) >= {"log", "ok", "output", "messages"}
    assert_round_trip(atc)


def test_deploy_host_and_run_configuration_records_round_trip_through_json_and_toml():
    from studio.remote.hosts import HostEntry
    from studio.runs.config import RunConfig
    from studio.tools.deploy.deployments import Deployment
    from studio.tools.deploy.sync import ApplyResult

    entry = HostEntry("npu1", "10.0.0.5", 2222, "me", "key", key_file="~/.ssh/id_ed25519", extra={"engine_root": "~/e"})
    assert "proxy_jump" not in to_json(entry) and "name" not in named_table(entry)
    assert_round_trip(entry)
    assert HostEntry.from_table("npu1", named_table(entry)) == entry
    deployment = Deployment("app", "npu1", "/tmp/app", "/home/me/app", ["*.om", "build/"])
    assert_round_trip(deployment)
    assert Deployment.from_table("app", named_table(deployment)) == deployment
    config = RunConfig("facemask", "./main ../data/test.jpg", "npu1", env={"ASCEND_DEVICE_ID": "0"})
    assert "workdir" not in to_json(config)
    assert_round_trip(config)
    assert RunConfig.from_toml(to_json(config)) == config
    applied = ApplyResult(3, 1, 0, 0, 4096, 1.5, [("a.bin", "Permission denied")], ["b.txt"],
                          [("../c", "outside the root")])
    assert to_json(applied)["failed"] == [{"path": "a.bin", "error": "Permission denied"}]
    assert_round_trip(applied)


def test_pipeline_check_infer_preprocess_engine_and_run_records_round_trip(demo):
    from studio.runs.engine_admin import EngineRunFolder, EngineVersion
    from studio.runs.engine_env import EngineEnv
    from studio.runs.runner import RunOutcome
    from studio.targets.probe import CheckItem
    from studio.tools.graph.pipeline.check import check_pipeline
    from studio.tools.graph.pipeline.document import read_pipeline
    from studio.tools.infer.preprocess import make_preprocess

    checked = check_pipeline(read_pipeline(demo / "app" / "pipeline" / "unet_simple_opencv.pipeline"))
    assert to_json(checked)["errors"] == len(checked.errors)
    assert_round_trip(checked)
    for finding in checked.findings:
        assert_round_trip(finding)
    assert_round_trip(make_preprocess((1, 3, 224, 224), "classify"))
    version = EngineVersion("0.4.1-abc", "~/.cache/studio-remote/0.4.1-abc", 51234, True,
                            [EngineRunFolder("~/.cache/studio-remote/runs/x", 3600, "me", "cut")])
    assert_round_trip(version)
    env = EngineEnv("npu1", "~/.cache/studio-remote/0.4.1", "python3.11", "3.11.9", ["created venv"], 12.5)
    assert to_json(env)["host"] == "npu1" and to_json(env)["reused"] is False
    assert_round_trip(env)
    assert_round_trip(RunOutcome("facemask", "npu1", "./main", 0, 2.5, ["ok"]))
    assert_round_trip(CheckItem("auth", "authentication", "ok", "key accepted"))


def test_local_profiling_run_round_trips(demo, tmp_path):
    from studio.tools.profiler.local_run import profile_model

    run = run_job(profile_model(demo / "models" / "classifier.onnx", tmp_path / "run", iterations=3, warmup=1))
    data = to_json(run)
    assert data["latency_ms"] == run.latency() and data["inputs"]["image"]["shape"] == [1, 3, 224, 224]
    back = assert_round_trip(run)
    assert back.folder == run.folder and back.inputs == run.inputs
