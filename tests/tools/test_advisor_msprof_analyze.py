"""msprof-analyze advisor on the real PyTorch-NPU fixture, folded into our report."""

from __future__ import annotations

import re
import shutil
import zipfile

import pytest

from studio.core.jobs import run_job
from studio.tools.advisor import msprof_analyze
from studio.tools.advisor.engine import advise


@pytest.fixture
def npu_dir(ascend_fixtures, tmp_path):
    """The fixture placed as DIR/ASCEND_PROFILER_OUTPUT (a copy: the shared folder stays untouched)."""
    root = tmp_path / "run"
    shutil.copytree(ascend_fixtures / "pytorch_npu", root / "ASCEND_PROFILER_OUTPUT")
    return root


needs_tool = pytest.mark.skipif(msprof_analyze.find_executable() is None,
                                reason="msprof-analyze is not installed (pip install 'studio-workbench[ascend]')")


@needs_tool
@pytest.mark.slow
def test_msprof_analyze_findings_join_the_report(npu_dir, tmp_path):
    report = run_job(advise(profile=npu_dir / "ASCEND_PROFILER_OUTPUT", msprof_out=tmp_path / "out"))
    theirs = [f for f in report.findings if f.source == "msprof-analyze"]
    ours = [f for f in report.findings if f.source == "studio"]
    assert theirs and ours
    assert report.msprof_analyze["ran"] and report.msprof_analyze["html"].endswith(".html")
    # independent: the category names in the workbook's problems sheet (raw XML) and the HTML headers
    with zipfile.ZipFile(report.msprof_analyze["xlsx"]) as book:
        strings = book.read("xl/sharedStrings.xml").decode()
    html = open(report.msprof_analyze["html"], encoding="utf-8").read()
    for f in theirs:
        assert f">{f.title}<" in strings
        assert f.severity in ("high", "medium", "low") and f.recommendation
        assert f.links == [report.msprof_analyze["html"], report.msprof_analyze["xlsx"]]
    colours = dict((t.strip(), c.lower()) for c, t in re.findall(r"background-color:\s*(#\w{6});\">([^<]+)</h2>", html))
    expected = {"#b5495b": "high", "#fcaf17": "medium", "#65c294": "low"}
    assert all(expected[colours[f.title]] == f.severity for f in theirs if f.title in colours)
    detailed = [f for f in theirs if f.details]
    assert detailed and all(t["rows"] for f in detailed for t in f.details.values())
    byte = next(f for f in theirs if "Byte Alignment" in f.title)
    rows = next(iter(byte.details.values()))["rows"]
    assert {r[0] for r in rows} == {"hcom_allReduce__586_0_1", "hcom_allReduce__586_3_1"}


@needs_tool
def test_bare_pytorch_folder_is_staged(ascend_fixtures, tmp_path):
    """The fixture folder itself (not named ASCEND_PROFILER_OUTPUT) is copied into a staging folder."""
    run = run_job(msprof_analyze.run_msprof_analyze(ascend_fixtures / "pytorch_npu", tmp_path / "out"))
    assert run.ran and run.findings
    assert not list((ascend_fixtures / "pytorch_npu").glob("mstt_advisor*"))  # nothing written beside the data


def test_not_installed_says_how_and_our_rules_still_run(npu_dir, monkeypatch, tmp_path):
    monkeypatch.setenv(msprof_analyze.ENV, str(tmp_path / "no-such-msprof-analyze"))
    report = run_job(advise(profile=npu_dir / "ASCEND_PROFILER_OUTPUT"))
    assert not report.msprof_analyze["available"]
    assert "pip install" in report.msprof_analyze["message"]
    assert any("not installed" in n for n in report.notes)
    assert report.findings and all(f.source == "studio" for f in report.findings)


def test_not_run_on_local_profiles(tmp_path):
    from advisor_helpers import host_sleep_trace

    report = run_job(advise(profile=host_sleep_trace(tmp_path / "t.json")))
    assert report.msprof_analyze == {}
