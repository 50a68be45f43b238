"""The Qt-free state of the Deployment, Converter, Graph and Advisor panels: the texts and
decisions their panels show, on real plans, reports and models, without a display."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from studio.tools.deploy.deployments import Deployment
from studio.tools.deploy.plan import make_plan
from studio.targets.transfer.scan import FileInfo, Scan
from studio.ui.panels.advisor import state as advisor
from studio.ui.panels.convert import state as convert
from studio.ui.panels.deploy import state as deploy
from studio.ui.panels.graph import state as graph


def test_every_state_module_imports_without_qt():
    code = ("import sys\n"
            "for name in ('graph', 'convert', 'deploy', 'advisor', 'profiler', 'accuracy'):\n"
            "    __import__(f'studio.ui.panels.{name}.state')\n"
            "print([m for m in sys.modules if m.split('.')[0] in ('PySide6', 'shiboken6', 'pyqtgraph')])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def scan(root: str, files: dict[str, int]) -> Scan:
    return Scan(root, {path: FileInfo(size, 1_700_000_000 + size) for path, size in files.items()})


def test_deployment_texts_and_what_an_apply_would_do(tmp_path):
    (tmp_path / "proj" / "sub").mkdir(parents=True)
    one = Deployment("proj", "box", str(tmp_path / "proj"), "/srv/proj", excludes=["*.log"])
    assert deploy.header_text(one) == f"<b>proj</b>: {tmp_path / 'proj'} ↔ box:/srv/proj — excluding *.log"
    assert deploy.deployment_for(tmp_path / "proj" / "sub", {"proj": one}) == "proj"
    assert deploy.deployment_for(tmp_path / "proj", {"proj": one}) == "proj"
    assert deploy.deployment_for(tmp_path, {"proj": one}) is None

    # both sides changed "a" since never synced: a conflict, never overwritten until chosen
    conflict = make_plan("sync", scan("/l", {"a": 1}), scan("/r", {"a": 2}), {})
    assert deploy.has_conflict(conflict, [0]) and not deploy.has_conflict(None, [0])
    assert not deploy.actionable(conflict)
    conflict.items[0].choice = "local"
    assert deploy.actionable(conflict)  # settled: it uploads
    assert "Conflicts are never overwritten" in deploy.plan_text(make_plan("sync", scan("/l", {"a": 1}),
                                                                           scan("/r", {"a": 2}), {}))

    upload = make_plan("upload", scan("/l", {"new": 3}), scan("/r", {"old": 4}), {}, delete=True)
    counts = upload.counts()
    assert deploy.actionable(upload) and deploy.deletions(counts) == 1
    question = deploy.deletions_question(one, counts, upload.mode)
    assert question.startswith("This upload deletes 1 file(s) on box:/srv/proj") and "Go ahead?" in question
    in_sync = make_plan("sync", scan("/l", {}), scan("/r", {}), {})
    assert not deploy.actionable(in_sync) and deploy.plan_text(in_sync) == in_sync.summary()


def test_a_failure_says_what_and_how_to_fix():
    from studio.core.errors import UserError

    assert deploy.failure_text(UserError("Host unreachable", "box", "Check the address.")) == \
        "Host unreachable — Check the address."
    assert deploy.failure_text(OSError("gone")) == "gone"


def test_converter_aipp_path_hints_and_results(tmp_path):
    assert convert.aipp_config_path("out/model.onnx") == Path("out/model_aipp.cfg")
    assert convert.aipp_config_path("  ") == Path("converted_aipp.cfg")
    assert convert.aipp_config_path("out/net") == Path("out/net_aipp.cfg")
    (tmp_path / "m.onnx").write_bytes(b"")
    cfg = tmp_path / "a.cfg"
    cfg.write_text("# model: m.onnx\n# preview: missing.png\naipp_op {\n  aipp_mode: static\n  input_format: RGB888_U8\n"
                   "  src_image_size_w: 8\n  src_image_size_h: 8\n}\n")
    config, hints = convert.read_aipp(cfg)
    assert hints == {"model": (tmp_path / "m.onnx").resolve()}  # the missing picture is left out
    assert len(config.ops) == 1

    state = convert.ConvertState()
    state.lines.extend(["one", "two"])
    assert state.take_lines() == "one\ntwo" and state.take_lines() is None
    nothing = state.record(None)
    assert nothing.path is None and nothing.status == "Converter: ATC finished" and state.result_path is None

    class Atc:  # what run_atc returns: the .om fetched back, the host, the log kept there
        local_om, host, log = str(tmp_path / "m.om"), "npu1", "/tmp/atc.log"

    done = state.record(Atc())
    assert done.path == tmp_path / "m.om" and not done.comparable and state.result_path == done.path
    assert done.log == f"ATC finished on npu1: wrote {tmp_path / 'm.om'} (output kept in npu1:/tmp/atc.log)"
    assert state.last_report is None


def test_graph_legend_tools_and_folded_groups():
    assert graph.category_legend().count("background:") == 8  # seven op categories and the groups
    assert "reference (dataSource)" in graph.category_legend("mindx_pipeline")
    assert graph.tools_enabled("onnx") == {"Profile": True, "FP16 check": True, "Convert…": True, "Run shapes": True}
    assert graph.tools_enabled("om") == {"Profile": False, "FP16 check": False, "Convert…": True, "Run shapes": True}
    assert graph.tools_enabled("mindx_pipeline")["Convert…"] is False
    assert graph.tools_enabled(None)["Profile"] is False

    class Group:
        def __init__(self, *groups):
            self.groups = list(groups)

    class Hierarchy:  # 0 holds 1 and 2; 2 holds 3; 4 stands alone
        groups = {0: Group(1, 2), 1: Group(), 2: Group(3), 3: Group(), 4: Group()}

    assert graph.groups_inside(Hierarchy, 2) == {2, 3}
    assert graph.groups_inside(Hierarchy, 0) == {0, 1, 2, 3}
    state = graph.GraphState()
    state.opening(Path("a.onnx"), 1, "conv1")
    state.opening(Path("a.onnx"), 2)
    assert state.opened == [Path("a.onnx")] and state.loaded(1) == "conv1" and state.loaded(1) is None


@pytest.fixture(scope="module")
def report():
    from studio.tools.advisor.model import Finding, Report

    return Report(findings=[Finding(id="a", title="t", severity="high", category="graph", fix="fold")],
                  model_path="m.onnx", profile_path=None, inputs={"accuracy": "r.csv"})


def test_advisor_texts(report):
    assert advisor.chosen_device(advisor.AUTO_DEVICE) is None and advisor.chosen_device("") is None
    assert advisor.chosen_device("Ascend310P3") == "Ascend310P3"
    text = advisor.verdict_text({"verdict": "slow", "findings": 3, "by_severity": {"high": 2, "low": 1, "info": 0}})
    assert text == "<b>slow</b> — 3 finding(s) (2 high, 1 low)"
    assert advisor.report_inputs(report) == {"model": "m.onnx", "profile": None, "accuracy": "r.csv", "bench": None}
    assert advisor.report_model(report) == Path("m.onnx") and advisor.report_profile(report) is None
    assert advisor.report_model(None) is None
    assert advisor.can_apply_fixes(report)
    report.model_path = "m.om"
    assert not advisor.can_apply_fixes(report)  # fixes rewrite ONNX models only
    report.model_path = "m.onnx"
