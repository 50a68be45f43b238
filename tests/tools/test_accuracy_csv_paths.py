"""A comparison CSV opens from any working folder: its tensor files are absolute, and a relative
one (an older table, a hand-moved one) is read relative to the CSV itself."""

from __future__ import annotations

import csv

import onnx
from onnx import TensorProto, helper

from studio.core.jobs import run_job
from studio.tools.accuracy.compare import compare_dumps
from studio.tools.accuracy.drilldown import compute_drilldown
from studio.tools.accuracy.local_dump import dump_model
from studio.tools.accuracy.report_csv import read_csv


def _dumps(tmp_path, monkeypatch):
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["r"], name="relu"),
                               helper.make_node("Sigmoid", ["r"], ["y"], name="sig")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    work = tmp_path / "work"
    work.mkdir()
    onnx.save(model, str(work / "m.onnx"))
    monkeypatch.chdir(work)  # the user works here with relative paths
    run_job(dump_model("m.onnx", "golden"))
    run_job(dump_model("m.onnx", "target", fp16_sim=True))
    result = run_job(compare_dumps("golden", "target"))
    return work, result


def test_a_csv_written_with_relative_dumps_drills_down_from_elsewhere(tmp_path, monkeypatch):
    work, result = _dumps(tmp_path, monkeypatch)
    (work / "tables").mkdir()
    result.write_csv("tables/cmp.csv")
    monkeypatch.chdir(tmp_path)  # opened later from another folder
    table = read_csv(work / "tables" / "cmp.csv")
    row = next(r for r in table.rows if r.name == "sig")
    drill = run_job(compute_drilldown(row.name, row.golden_file, row.target_file))
    assert drill is not None


def test_relative_paths_in_a_csv_are_read_relative_to_the_csv(tmp_path, monkeypatch):
    work, result = _dumps(tmp_path, monkeypatch)
    result.write_csv("cmp.csv")
    # a table as older versions wrote it: tensor files relative to the folder it was written from
    rows = list(csv.reader((work / "cmp.csv").open(newline="")))
    golden_col, target_col = rows[0].index("GoldenFile"), rows[0].index("TargetFile")
    for cells in rows[1:]:
        for col in (golden_col, target_col):
            if cells[col]:
                cells[col] = str(tmp_path.joinpath(cells[col]).relative_to(work)) if cells[col].startswith("/") \
                    else cells[col]
    moved = tmp_path / "elsewhere"
    (work).rename(moved)  # the folder moved as a whole; the CSV and its dumps stay together
    with (moved / "cmp.csv").open("w", newline="") as handle:
        csv.writer(handle).writerows(rows)
    monkeypatch.chdir(tmp_path)
    table = read_csv(moved / "cmp.csv")
    row = next(r for r in table.rows if r.name == "sig")
    assert row.golden_file == str(moved / "golden" / row.golden_file.rsplit("/", 1)[-1])
    run_job(compute_drilldown(row.name, row.golden_file, row.target_file))
