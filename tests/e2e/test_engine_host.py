"""Studio's own engine on a host without CANN: the real loopback sshd, a real venv made there once
per session (from the machine's package index), the same commands run there, results fetched."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import numpy as np
import onnx
import pytest

from standins import write_host
from test_cli import run_studio


@pytest.fixture(scope="session")
def engine_host(sshd, tmp_path_factory):
    """One bootstrap per session: (host entry, known hosts, engine root, the first EngineEnv)."""
    from studio.core.jobs import run_job
    from studio.remote.hosts import HostEntry
    from studio.remote.known_hosts import KnownHosts
    from studio.runs.engine_env import ensure_engine
    from studio.runs.engine_wheel import build_wheel
    from studio.targets.ssh import SshTarget

    root = tmp_path_factory.mktemp("engines") / "cache dir 'q'"  # spaces and a quote in the remote path
    entry = HostEntry(name="box", host=sshd.host, port=sshd.port, user=sshd.user, auth="key",
                      key_file=str(sshd.client_key), extra={"engine_root": str(root)})
    known = KnownHosts(read_only=[sshd.known_hosts])
    wheel = build_wheel(tmp_path_factory.mktemp("wheels"))
    start = time.monotonic()
    with SshTarget(entry, known) as target:
        first = run_job(ensure_engine(target, wheel=wheel))
    return {"entry": entry, "known": known, "root": root, "first": first, "wheel": wheel,
            "seconds": time.monotonic() - start}


@pytest.fixture
def box(engine_host, sshd, studio_home):
    write_host(studio_home, sshd, engine_root=str(engine_host["root"]))
    return studio_home


@pytest.fixture
def model(tmp_path) -> Path:
    from studio.tools.demo.models import build_classifier

    path = tmp_path / "my model" / "cls.onnx"
    path.parent.mkdir()
    onnx.save(build_classifier(), str(path))
    return path


def _ensure(engine_host):
    from studio.core.jobs import run_job
    from studio.runs.engine_env import ensure_engine
    from studio.targets.ssh import SshTarget

    with SshTarget(engine_host["entry"], engine_host["known"]) as target:
        return run_job(ensure_engine(target, wheel=engine_host["wheel"]))


def test_profile_round_trip_reuses_the_engine(box, engine_host, model, tmp_path):
    first = engine_host["first"]
    assert "created the venv" in first.actions and first.folder.startswith(str(engine_host["root"]))
    assert (Path(first.folder) / "venv" / "bin" / "python").exists()
    out = tmp_path / "profile out"
    result = run_studio("profile", "run", str(model), "--host", "box", "-o", str(out), "--iterations", "4",
                        "--json", home=box, timeout=300)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["ran_on"]["host"] == "box" and data["ran_on"]["engine_reused"] is True
    assert data["ran_on"]["engine_actions"] == []
    assert data["folder"] == str(out) and data["model"] == str(model)
    # The fetched folder holds the run the host printed: the same numbers, recomputed here.
    saved = json.loads((out / "studio_profile.json").read_text())
    assert saved["latency_ms"] == data["latency_ms"] and len(saved["latencies_ms"]) == 4
    lat = np.array(saved["latencies_ms"])
    assert data["latency_ms"]["mean"] == pytest.approx(lat.mean()) and data["latency_ms"]["max"] == lat.max()
    ort_events = json.loads((out / "onnxruntime_profile.json").read_text())
    assert sum(1 for e in ort_events if e.get("name") == "model_run") == 4 + 3  # iterations + warm-ups
    stats = run_studio("profile", "stats", str(out), "--json", home=box)
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)["events"] > 0
    assert not list(out.glob(".studio-fetch-*")) and not list(tmp_path.glob(".studio-fetch-*"))
    # The remote work folder goes (removed without waiting for it); the engine folder stays.
    deadline = time.monotonic() + 10
    while list(Path(engine_host["root"]).glob("*/runs/*")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not list(Path(engine_host["root"]).glob("*/runs/*"))
    # Reuse is one probe: measured through the API, printed for the record.
    start = time.monotonic()
    again = _ensure(engine_host)
    print(f"engine bootstrap {engine_host['seconds']:.1f} s, reuse {time.monotonic() - start:.2f} s")
    assert again.reused


def test_a_damaged_engine_is_repaired(box, engine_host):
    folder = Path(engine_host["first"].folder)
    site = next((folder / "venv" / "lib").glob("python3*/site-packages"))
    for item in list(site.glob("msgspec*")):  # a package deleted behind Studio's back
        shutil.rmtree(item) if item.is_dir() else item.unlink()
    marker = folder / "studio-env.json"
    data = json.loads(marker.read_text())
    marker.write_text(json.dumps({**data, "source": "another studio"}))  # another Studio's marker
    repaired = _ensure(engine_host)
    assert any(a.startswith("installed msgspec==") for a in repaired.actions), repaired.actions
    assert any(a.startswith("installed studio_workbench") for a in repaired.actions)
    assert not any("onnx==" in a for a in repaired.actions)  # only what differed
    assert json.loads(marker.read_text())["source"] == engine_host["wheel"].source
    assert _ensure(engine_host).reused
    (folder / "venv" / "bin" / "python").unlink()  # a venv that no longer runs is made again
    remade = _ensure(engine_host)
    assert remade.actions[0] == "created the venv" and any("onnxruntime==" in a for a in remade.actions)
    assert _ensure(engine_host).reused


def test_dump_there_equals_dump_here(box, model, tmp_path):
    there = tmp_path / "there"
    result = run_studio("dump", str(model), "--host", "box", "-o", str(there), "--seed", "3", "--json",
                        home=box, timeout=300)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    here = tmp_path / "here"
    local = run_studio("dump", str(model), "-o", str(here), "--seed", "3", "--json", home=box)
    assert local.returncode == 0, local.stderr
    assert data["dir"] == str(there) and data["tensors"] == json.loads(local.stdout)["tensors"]

    def tensors(folder: Path) -> dict[str, Path]:  # file names end in a timestamp: key on "op.index"
        return {".".join(p.name.split(".")[:2]): p for p in folder.rglob("*.npy")}

    remote, local_files = tensors(there), tensors(here)
    assert sorted(remote) == sorted(local_files) and remote
    for key, file in remote.items():
        np.testing.assert_allclose(np.load(file), np.load(local_files[key]), rtol=1e-5, atol=1e-6)


def test_bench_and_convert_validate_there(box, model, tmp_path):
    bench = run_studio("bench", str(model), "--host", "box", "--loop", "5", "--warmup", "1", "--json",
                       home=box, timeout=300)
    assert bench.returncode == 0, bench.stderr
    data = json.loads(bench.stdout)
    local = json.loads(run_studio("bench", str(model), "--loop", "2", "--warmup", "0", "--json", home=box).stdout)
    assert set(local) <= set(data) and data["ran_on"]["host"] == "box" and data["where"] == "box"
    lat = np.array(data["latencies_ms"])
    assert len(lat) == 5 and data["mean_ms"] == pytest.approx(lat.mean()) and data["max_ms"] == lat.max()

    out = tmp_path / "converted" / "cls_fp16.onnx"
    out.parent.mkdir()
    conv = run_studio("convert", str(model), "--output-type", "FP16", "--validate", "--host", "box", "-o", str(out),
                      "--json", home=box, timeout=300)
    assert conv.returncode == 0, conv.stderr
    report = json.loads(conv.stdout)
    assert report["validation"]["passed"] is True
    onnx.checker.check_model(str(out))
    converted = onnx.load(str(out))
    assert any(t.data_type == onnx.TensorProto.FLOAT16 for t in converted.graph.initializer)
    assert (out.parent / "cls_fp16.report.json").is_file()
    # The converted model runs here and agrees with the original (checked independently of the report).
    import onnxruntime as ort

    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
    a = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"]).run(None, {"image": x})[0]
    b = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"]).run(None, {"image": x})[0]
    np.testing.assert_allclose(a, b.astype(np.float32), atol=2e-2, rtol=2e-2)


def test_infer_there_equals_infer_here(box, model, tmp_path):
    """``studio infer MODEL.onnx --host``: Studio's engine there, the pictures up in one archive,
    the folder back with this computer's paths in its results.json."""
    import cv2

    from studio.tools.demo.images import make_demo_images

    pictures = tmp_path / "pictures here"
    pictures.mkdir()
    for seed in range(3):
        for name, image in make_demo_images(seed=seed).items():
            cv2.imwrite(str(pictures / f"{name}_{seed}.png"), image)
    there, here = tmp_path / "there", tmp_path / "here"
    remote = run_studio("infer", str(model), str(pictures), "-o", str(there), "--task", "classify", "--host", "box",
                        "--json", home=box, timeout=300)
    assert remote.returncode == 0, remote.stderr
    local = run_studio("infer", str(model), str(pictures), "-o", str(here), "--task", "classify", "--json", home=box)
    assert local.returncode == 0, local.stderr
    data, expected = json.loads(remote.stdout), json.loads(local.stdout)
    assert data["ran_on"]["host"] == "box" and len(data["images"]) == len(list(pictures.iterdir())) > 8

    def rows(items):
        return [{k: v for k, v in row.items() if k != "ms"} for row in items]

    assert rows(data["images"]) == rows(expected["images"])
    written = json.loads((there / "results.json").read_text())
    assert written["summary"]["pictures"] == str(pictures) and written["summary"]["model"] == str(model)
    assert sorted(p.name for p in (there / "overlays").iterdir()) == sorted(p.name for p in (here / "overlays").iterdir())


def test_fp16_check_and_cross_check_on_a_host_from_the_command_line(box, model, tmp_path):
    """The graph's FP16 check and the accuracy panel's here-against-a-host, as commands: the dumps
    are made by the engine on the host (same request as here), come back, and are compared here."""
    there = run_studio("fp16-check", str(model), "--host", "box", "-o", str(tmp_path / "there"), "--json",
                       home=box, timeout=300)
    assert there.returncode == 0, there.stderr
    here = run_studio("fp16-check", str(model), "-o", str(tmp_path / "here"), "--json", home=box, timeout=300)
    a, b = json.loads(there.stdout), json.loads(here.stdout)
    assert a["ran_on"]["host"] == "box" and "ran_on" not in b
    assert a["golden"] == str(tmp_path / "there" / "cls_fp32") and Path(a["csv"]).is_file()
    assert set(b) <= set(a) and len(a["rows"]) == len(b["rows"]) > 0 and a["passed"] == b["passed"]
    cross = run_studio("cross-check", str(model), "--host", "box", "-o", str(tmp_path / "x"), "--seed", "2",
                       "--check", home=box, timeout=300)
    assert cross.returncode == 0, cross.stderr + cross.stdout
    assert f"dumps: {tmp_path / 'x' / 'cls_here'} (here), {tmp_path / 'x' / 'cls_on_box'} (on the host)" in cross.stdout
    assert "(ran with Studio's engine on box" in cross.stdout
    assert (tmp_path / "x" / "cls_here_vs_cls_on_box.csv").is_file()


def test_compare_models_on_a_host_equals_here(box, model, tmp_path):
    """The converter's "compare with original" as a command, both dumps made by the engine on the
    host: the converted model there got the original's arrays, and the verdict is the one here."""
    from studio.tools.accuracy.local_dump import reusable_inputs

    converted = tmp_path / "cls_fp16.onnx"
    made = run_studio("convert", str(model), "-o", str(converted), "--output-type", "FP16", home=box, timeout=300)
    assert made.returncode == 0, made.stderr
    runs = {}
    for where, extra in (("there", ["--host", "box"]), ("here", [])):
        done = run_studio("accuracy", "compare-models", str(model), str(converted), "-o", str(tmp_path / where),
                          "--seed", "3", "--json", *extra, home=box, timeout=300)
        assert done.returncode == 0, done.stderr
        runs[where] = json.loads(done.stdout)
    there, here = runs["there"], runs["here"]
    assert there["ran_on"]["host"] == "box" and "ran_on" not in here
    fed = reusable_inputs(tmp_path / "there" / "golden", model)["image"]
    np.testing.assert_array_equal(reusable_inputs(tmp_path / "there" / "target", converted)["image"], fed)
    np.testing.assert_array_equal(reusable_inputs(tmp_path / "here" / "golden", model)["image"], fed)
    (a,), (b,) = there["diagnosis"]["outputs"], here["diagnosis"]["outputs"]
    assert a["cosine"] == pytest.approx(b["cosine"], abs=1e-9) and a["status"] == b["status"] == "passes"
    assert there["mapping"] == here["mapping"] == str(converted.with_name("cls_fp16.report.json"))


def test_a_provider_this_onnxruntime_lacks_is_refused(box, model):
    for extra in ([], ["--host", "box"]):
        result = run_studio("bench", str(model), "--provider", "NopeExecutionProvider", *extra, home=box)
        assert result.returncode != 0
        # With --host the host's onnxruntime answers (a GPU server may have what this computer lacks).
        assert "no NopeExecutionProvider" in result.stderr and "CPUExecutionProvider" in result.stderr
        assert ("On box" in result.stderr) == bool(extra)
        assert "Traceback" not in result.stderr


def test_engine_errors_say_what_to_do():
    from studio.core.errors import UserError
    from studio.runs.engine_env import _check_python, _pip_fix, parse_probe, plan

    class Host:
        where = "gpu-box"

    with pytest.raises(UserError, match="3.8.10.*3.11 or newer") as too_old:
        _check_python(Host(), {"python3": "/usr/bin/python3", "host_python": "3.8.10", "venv": "yes"})
    assert "gpu-box" in str(too_old.value)
    with pytest.raises(UserError, match="python3.12-venv"):
        _check_python(Host(), {"python3": "/usr/bin/python3", "host_python": "3.12.3", "venv": "no"})
    with pytest.raises(UserError, match="no python3"):
        _check_python(Host(), {"python3": ""})
    assert "package index" in _pip_fix("ERROR: No matching distribution found for numpy==2.4.6", "gpu-box")
    pins = {"numpy": "2.4.6", "onnx": "1.23.2"}
    found = parse_probe('env=/x\nhost_python=3.12.3\nmarker={"source": "s", "python": "3.12.3"}\n'
                        'report={"python": "3.12.3", "numpy": "2.4.6", "onnx": "1.20.0", "studio-workbench": "0.1.0"}')
    assert plan(found, "s", pins) == (False, {"onnx": "1.23.2"}, False)
    changed = {**found, "report": {**found["report"], "python": "3.12.8"}}
    assert plan(changed, "s", pins)[0] is True  # the venv's python was upgraded in place: a new venv
    assert plan({**found, "report": None}, "s", pins)[0] is True           # the venv's python does not run
    assert plan({**found, "marker": None}, "s", pins)[2] is True           # no marker: the wheel again


def _panel_with_the_box(qtbot, panel_class, engine_host, tmp_path):
    """A panel (its own job runner) whose host store holds the engine host, workspace ``tmp_path/ws``."""
    from studio.remote.context import HostContext
    from studio.remote.hosts import HostStore
    from studio.ui.jobs import JobRunner

    store = HostStore(tmp_path / "hosts.toml")
    store.put(engine_host["entry"])
    runner = JobRunner()
    panel = panel_class(runner)
    qtbot.addWidget(panel)
    panel.host_context = HostContext(store=store, known_hosts=engine_host["known"])
    panel.workspace_folder = tmp_path / "ws"
    return panel, runner


def _choose_the_box(dialog) -> None:
    assert [dialog.where.itemText(i) for i in range(dialog.where.count())] == ["This computer", "box"]
    dialog.where.setCurrentIndex(1)
    dialog.accept()


def test_profile_on_a_host_from_the_profiler_panel(qtbot, engine_host, model, tmp_path):
    """Profile model… → Run on: box → the engine there → the fetched profile opens in the panel."""
    from studio.ui.panels.profiler import ProfilerPanel

    panel, runner = _panel_with_the_box(qtbot, ProfilerPanel, engine_host, tmp_path)
    panel.ask_where(model)
    _choose_the_box(panel.run_on_dialog)
    qtbot.waitUntil(lambda: panel.last_run is not None or "Could not" in panel.info.text(), timeout=180_000)
    assert panel.last_run is not None, panel.info.text()
    run = panel.last_run
    assert run.host == "box" and len(run.latencies_ms) == panel.iterations
    folder = run.folder
    assert folder.parent == tmp_path / "ws" / "profiles" and (folder / "studio_profile.json").is_file()
    saved = json.loads((folder / "studio_profile.json").read_text())
    assert saved["latencies_ms"] == run.latencies_ms
    assert panel.profiles[-1].path == folder and panel.profiles[-1].trace.size > 0
    assert "cls.onnx on box: mean" in panel.info.toolTip()
    runner.cancel_all()
    runner.wait_for_done(5000)
    panel.host_context.close()


def test_fp16_check_on_a_host_from_the_graph_s_button(qtbot, engine_host, model, tmp_path):
    """FP16 check → Run on: box → both dumps made by the engine there → the comparison here equals a
    check made on this computer (same ONNX Runtime version, same seeded input)."""
    from studio.core.jobs import run_job
    from studio.tools.accuracy.fp16_check import csv_path, fp16_check_job
    from studio.ui.panels.accuracy import AccuracyPanel

    panel, runner = _panel_with_the_box(qtbot, AccuracyPanel, engine_host, tmp_path)
    said: list[str] = []
    panel.status.connect(said.append)
    panel.links.check_fp16.emit(model)  # what the graph panel's button sends
    _choose_the_box(panel.run_on_dialog)
    qtbot.waitUntil(lambda: panel.result is not None, timeout=240_000)
    there = panel.result
    assert f"FP16 check of {model.name} on box…" in said, said
    golden = tmp_path / "ws" / "accuracy" / f"{model.stem}_fp32"
    assert (golden / "manifest.json").is_file() and csv_path(golden).is_file()
    here = run_job(fp16_check_job(model, tmp_path / "here" / "g", tmp_path / "here" / "t"))
    assert len(there.rows) == len(here.rows) > 0
    for a, b in zip(there.rows, here.rows, strict=True):
        assert a.name == b.name
        if a.metrics is not None and b.metrics is not None:
            assert a.metrics.cosine == pytest.approx(b.metrics.cosine, abs=1e-9, nan_ok=True)
    runner.cancel_all()
    runner.wait_for_done(5000)
    panel.host_context.close()


def test_convert_on_a_host_from_the_converter_panel(qtbot, engine_host, model, tmp_path):
    """Converter: FP16 + validation, a pass switched off → Convert → Run on: box → the engine converts
    there → the model and its report land next to Output, with this computer's paths, and equal a
    conversion made here."""
    from PySide6.QtCore import Qt

    from studio.core.jobs import run_job
    from studio.tools.convert.convert import convert_model
    from studio.ui.panels.convert.panel import ConvertPanel

    panel, runner = _panel_with_the_box(qtbot, ConvertPanel, engine_host, tmp_path)
    panel.model_page.set_model(model)
    qtbot.waitUntil(lambda: panel.model_page.inputs_table.rowCount() == 1, timeout=10_000)
    out = tmp_path / "out dir" / "cls_fp16.onnx"
    panel.model_page.output_edit.setText(str(out))
    panel.model_page.output_type_combo.setCurrentText("FP16")
    items = panel.advanced_page.passes_list
    folding = next(items.item(i) for i in range(items.count())
                   if items.item(i).data(Qt.ItemDataRole.UserRole) == "ConstantFolding")
    folding.setCheckState(Qt.CheckState.Unchecked)
    assert panel.advanced_page.validate_box.isChecked()
    options = panel.options()
    panel.finish_button.click()
    dialog = panel.run_on_dialog
    from PySide6.QtWidgets import QLabel

    intro = " ".join(label.text() for label in dialog.findChildren(QLabel))
    assert "Convert cls.onnx with Studio's passes and validate it with ONNX Runtime" in intro, intro
    with qtbot.waitSignal(panel.request_load, timeout=240_000) as opened:
        _choose_the_box(dialog)
    assert Path(opened.args[0]) == out and out.is_file()
    log = panel.log.toPlainText()
    assert "--host box" in log and "[box] validating against the original" in log and "-> ok" in log
    report = json.loads(out.with_name("cls_fp16.report.json").read_text())
    assert report["model"] == str(model) and report["output"] == str(out)
    assert report["passes"]["ConstantFolding"] is False and report["validation"]["passed"] is True
    stamps = {p.key: p.value for p in onnx.load(str(out)).metadata_props}
    assert stamps["studio.convert.source"] == str(model)
    assert stamps["studio.convert.report"] == str(out.with_name("cls_fp16.report.json"))
    assert panel.last_report.validation["passed"] is True and panel.result_path == out

    # The same options converted here: the same graph, the same outputs.
    options.output = tmp_path / "here" / "cls_fp16.onnx"
    run_job(convert_model(options))
    there, here = onnx.load(str(out)), onnx.load(str(options.output))
    assert [n.op_type for n in there.graph.node] == [n.op_type for n in here.graph.node]
    import onnxruntime as ort

    x = np.random.default_rng(1).standard_normal((1, 3, 224, 224)).astype(np.float32)
    a = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"]).run(None, {"image": x})[0]
    b = ort.InferenceSession(str(options.output), providers=["CPUExecutionProvider"]).run(None, {"image": x})[0]
    np.testing.assert_array_equal(a, b)
    runner.cancel_all()
    runner.wait_for_done(5000)
    panel.host_context.close()


def test_benchmark_on_a_host_from_the_profiler_panel(qtbot, engine_host, model, tmp_path):
    """Benchmark model… → Run on: box → the engine times it there → the folder comes back, named for
    the host and this computer's model, and opens with its numbers."""
    from studio.ui.panels.profiler import ProfilerPanel

    panel, runner = _panel_with_the_box(qtbot, ProfilerPanel, engine_host, tmp_path)
    panel.ask_bench(model)
    dialog = panel.bench_dialog
    assert [dialog.where.itemText(i) for i in range(dialog.where.count())] == ["This computer", "box"]
    dialog.where.setCurrentIndex(1)
    dialog.loop.setValue(6)
    dialog.warmup.setValue(2)
    dialog.accept()
    qtbot.waitUntil(lambda: panel.last_bench is not None or "Could not" in panel.info.text(), timeout=240_000)
    bench = panel.last_bench
    assert bench is not None, panel.info.text()
    lat = np.array(bench["latencies_ms"])
    assert bench["where"] == "box" and bench["model"] == str(model) and bench["loops"] == 6 == len(lat)
    assert bench["mean_ms"] == pytest.approx(lat.mean()) and bench["min_ms"] <= bench["p50_ms"] <= bench["max_ms"]
    folder = panel.profiles[-1].path
    assert folder.parent == tmp_path / "ws" / "profiles"
    summary = json.loads((folder / "studio_profile.json").read_text())
    assert summary["facts"]["benchmark"].startswith("onnxruntime on box") and summary["model"] == str(model)
    assert "cls.onnx with onnxruntime on box: mean" in panel.info.text()
    runner.cancel_all()
    runner.wait_for_done(5000)
    panel.host_context.close()


def test_compare_here_and_on_a_host_from_the_accuracy_panel(qtbot, engine_host, model, tmp_path):
    """On host ▾ → Compare an .onnx here and on a host → box → the model dumped here and by the engine
    there on the same seeded input; the comparison shows every op, tensor equal to tensor."""
    from studio.tools.accuracy.dumpset import load_dump
    from studio.ui.panels.accuracy import AccuracyPanel

    panel, runner = _panel_with_the_box(qtbot, AccuracyPanel, engine_host, tmp_path)
    assert panel.here_and_host_action.text() == "Compare an .onnx here and on a host…"
    panel.compare_here_and_on_host(model)
    dialog = panel.host_compare_dialog
    assert [dialog.where.itemText(i) for i in range(dialog.where.count())] == ["box"]
    dialog.accept()
    qtbot.waitUntil(lambda: panel.result is not None, timeout=240_000)
    result = panel.result
    here, there = tmp_path / "ws" / "accuracy" / "cls_here", tmp_path / "ws" / "accuracy" / "cls_on_box"
    assert panel.last_pair == (here, there)
    assert (here / "manifest.json").is_file() and (there / "manifest.json").is_file()
    assert (here.parent / "cls_here_vs_cls_on_box.csv").is_file()
    assert len(result.compared) > 10 and all(r.passed for r in result.compared)
    # Independently: each tensor made there equals the one made here (same ONNX Runtime, CPU).
    a, b = load_dump(here), load_dump(there)
    for entry in a.entries[:5]:
        twin = next(e for e in b.entries if e.op_name == entry.op_name and e.index == entry.index)
        np.testing.assert_allclose(a.load(entry), b.load(twin), rtol=1e-5, atol=1e-6)
    runner.cancel_all()
    runner.wait_for_done(5000)
    panel.host_context.close()


def test_compare_here_and_on_a_host_without_hosts_says_how_to_add_one(qtbot, tmp_path, model):
    from studio.remote.context import HostContext
    from studio.remote.hosts import HostStore
    from studio.ui.jobs import JobRunner
    from studio.ui.panels.accuracy import AccuracyPanel

    panel = AccuracyPanel(JobRunner())
    qtbot.addWidget(panel)
    panel.host_context = HostContext(store=HostStore(tmp_path / "hosts.toml"))
    panel.compare_here_and_on_host(model)
    assert "Hosts panel" in panel.sources.text() and panel.result is None


def test_cancel_kills_the_run_on_the_host(engine_host, model):
    """Cancel while the host's engine profiles: the remote process group is gone, nothing fetched."""
    import subprocess

    from studio.core.errors import Cancelled
    from studio.core.jobs import CancelToken, run_job
    from studio.runs.engine_run import model_uploads, run_engine_command
    from studio.targets.ssh import SshTarget

    cancel = CancelToken()
    seen = []

    def on_progress(step):
        seen.append(step.message)
        if "iteration 2" in step.message:
            cancel.cancel()

    out = model.parent / "never"
    with SshTarget(engine_host["entry"], engine_host["known"]) as target:
        env = _ensure(engine_host)
        args = ["profile", "run", "in/cls.onnx", "-o", "out/p", "--iterations", "100000", "--warmup", "0"]
        with pytest.raises(Cancelled):
            run_job(run_engine_command(target, env, args, model_uploads(model), out, cancel=cancel), cancel,
                    on_progress=on_progress)
    assert any("iteration 2" in m for m in seen)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
        if "--iterations 100000" not in ps:
            break
        time.sleep(0.2)
    assert "--iterations 100000" not in ps
    assert not out.exists() or not any(out.iterdir())
