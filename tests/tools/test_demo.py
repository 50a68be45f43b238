"""Demo content, beyond tests/tools/test_demo_models.py: inner activations, weights, images, jobs.

test_demo_models.py checks the outputs and the workspace round trip; this file checks that the
networks are numerically healthy inside, that their weights look like a trained network's (so
Conv+BN folding has work to do), that the pictures are deterministic, and the job's edges.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import studio
from studio.core.errors import Cancelled, UserError
from studio.core.jobs import CancelToken, Progress, run_job
from studio.tools.demo.images import DEMO_IMAGES, make_demo_images
from studio.tools.demo.models import DEMO_MODELS, SSD_ANCHORS
from studio.tools.demo.workspace import DEMO_VERSION, MARKER_NAME, create_demo_workspace

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


@pytest.fixture(scope="module")
def built():
    return {name: spec.build() for name, spec in DEMO_MODELS.items()}


def run_with_intermediates(proto, op_types: set[str]) -> tuple[dict, dict]:
    """Run the model with every output of the given op types exposed; return (outputs, inner)."""
    probe = onnx.ModelProto()
    probe.CopyFrom(proto)
    finals = [o.name for o in probe.graph.output]
    inner = [n.output[0] for n in probe.graph.node if n.op_type in op_types]
    for name in inner:
        probe.graph.output.append(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    session = ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(123)
    feeds = {i.name: rng.standard_normal(i.shape).astype(np.float32) for i in session.get_inputs()}
    values = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))
    return {k: values[k] for k in finals}, {k: values[k] for k in inner}


@pytest.mark.parametrize("name", sorted(DEMO_MODELS))
def test_activations_stay_near_unit_scale(built, name):
    _, inner = run_with_intermediates(built[name], {"Relu", "MaxPool", "ConvTranspose"})
    assert inner, "every demo model has ReLU layers"
    for tensor, value in inner.items():
        rms = float(np.sqrt(np.mean(value.astype(np.float64) ** 2)))
        # Neither exploding through depth nor dying: a He-scaled net stays within a small factor.
        assert 0.2 < rms < 8.0, f"{tensor}: rms {rms:.3f}"
        assert np.abs(value).max() < 100.0, tensor
        if tensor.endswith("/relu"):  # a healthy share of units is active (max pools are denser)
            assert 0.2 < (value > 0).mean() < 0.9, tensor


def test_unet_mask_follows_the_input_and_uses_both_classes(built):
    outputs, _ = run_with_intermediates(built["unet"], set())
    foreground = outputs["mask"][0, 1]
    # Not a constant answer: both classes win somewhere, and the map varies across the picture.
    assert 0.1 < (foreground > 0.5).mean() < 0.95
    assert foreground.std() > 0.1
    np.testing.assert_allclose(outputs["mask"].sum(axis=1), 1.0, atol=1e-5)


def test_detector_anchor_count_and_class_balance(built):
    assert SSD_ANCHORS == 38 * 38 * 4 + 19 * 19 * 6 + 10 * 10 * 6 + 5 * 5 * 4 == 8642
    outputs, _ = run_with_intermediates(built["ssd_detector"], set())
    winners = np.bincount(outputs["scores"][0].argmax(axis=-1), minlength=3)
    assert (winners > SSD_ANCHORS // 10).all(), "each class wins for some anchors"


def test_colorization_output_is_bounded_but_not_saturated(built):
    outputs, _ = run_with_intermediates(built["colorization"], set())
    ab = outputs["ab"]
    assert np.abs(ab).max() <= 110.0
    assert (np.abs(ab) > 109.0).mean() < 0.1, "tanh should rarely saturate"


@pytest.mark.parametrize("name", sorted(DEMO_MODELS))
def test_model_metadata_and_weights(built, name):
    proto = built[name]
    assert (proto.ir_version, proto.opset_import[0].version) == (7, 13)
    assert proto.producer_name == "studio-demo" and proto.doc_string
    onnx.checker.check_model(proto, full_check=True)
    weights = {t.name: onnx.numpy_helper.to_array(t) for t in proto.graph.initializer}
    assert all(t.data_type in (onnx.TensorProto.FLOAT, onnx.TensorProto.INT64)
               for t in proto.graph.initializer)
    for node in proto.graph.node:
        if node.op_type == "BatchNormalization":
            scale, bias, mean, var = (weights[i] for i in node.input[1:])
            # Close to identity, but not identity: folding into the Conv must do real work.
            assert 0.5 < scale.mean() < 1.5 and scale.std() > 0.01
            assert abs(bias.mean()) < 0.2 and np.abs(mean).max() > 0.01
            assert (var > 0.5).all() and (var < 1.5).all() and var.std() > 0.01


def test_node_names_are_unique_scoped_paths(built):
    for name, proto in built.items():
        names = [n.name for n in proto.graph.node]
        assert len(set(names)) == len(names), name
        assert all("/" in n for n in names), name
    ssd = {n.name for n in built["ssd_detector"].graph.node}
    assert {"head_box_2/conv", "head_cls_4/reshape"} <= ssd
    unet = {n.name for n in built["unet"].graph.node}
    assert {"encoder1/conv1/conv", "encoder1/conv1/bn", "decoder2/up/resize",
            "decoder4/up/convtranspose"} <= unet


def test_images_are_deterministic_and_sized_for_the_models():
    first, second, other = make_demo_images(0), make_demo_images(0), make_demo_images(1)
    assert list(first) == [spec.name for spec in DEMO_IMAGES]
    for spec in DEMO_IMAGES:
        image = first[spec.name]
        assert image.shape == (spec.size, spec.size, 3) and image.dtype == np.uint8
        assert np.array_equal(image, second[spec.name])
        assert not np.array_equal(image, other[spec.name])
        # Shapes on noise: many distinct colours, and a textured, not flat, background.
        assert len(np.unique(image.reshape(-1, 3), axis=0)) > 1000
    sizes = sorted(spec.size for spec in DEMO_IMAGES)
    assert {256, 300, 640} <= set(sizes) and sizes.count(224) == 2


def test_pre_cancelled_token_stops_before_writing(tmp_path):
    token = CancelToken()
    token.cancel()
    target = tmp_path / "demo"
    job = create_demo_workspace(target, token)
    with pytest.raises(Cancelled):
        next(job)  # the engine's own check, not only run_job's
    with pytest.raises(Cancelled):
        run_job(create_demo_workspace(target, token), cancel=token)
    assert not list(tmp_path.rglob("*.tmp"))
    assert not (target / MARKER_NAME).exists() or (target / MARKER_NAME).read_text() != "1"


def test_cancel_between_images_leaves_no_tmp(tmp_path):
    token = CancelToken()
    steps: list[Progress] = []

    def cancel_at_images(step: Progress) -> None:
        steps.append(step)
        if "image" in step.message:
            token.cancel()

    with pytest.raises(Cancelled):
        run_job(create_demo_workspace(tmp_path / "demo", token), on_progress=cancel_at_images)
    assert not list(tmp_path.rglob("*.tmp"))
    assert not list((tmp_path / "demo" / "images").glob("*.png")), "stopped before the first image"


def test_refuses_a_file_and_a_foreign_folder(tmp_path):
    a_file = tmp_path / "model.onnx"
    a_file.write_bytes(b"not a folder")
    with pytest.raises(UserError) as info:
        run_job(create_demo_workspace(a_file))
    assert info.value.fix
    foreign = tmp_path / "project"
    (foreign / "src").mkdir(parents=True)
    with pytest.raises(UserError):
        run_job(create_demo_workspace(foreign))
    assert [p.name for p in foreign.iterdir()] == ["src"]


def test_workspace_readme_lists_every_file_and_marker_holds_the_version(tmp_path):
    demo = run_job(create_demo_workspace(tmp_path / "demo"))
    readme = (demo.folder / "README.md").read_text(encoding="utf-8")
    for path in demo.files:
        if path.name != "README.md":
            assert path.name in readme, path.name
    assert (demo.folder / MARKER_NAME).read_text().strip() == DEMO_VERSION == "2"
    assert not (demo.folder / "studio.toml").exists(), "the settings file belongs to the caller"


def test_every_model_gets_an_input_array_made_from_its_picture(tmp_path, built):
    demo = run_job(create_demo_workspace(tmp_path / "demo"))
    arrays = {p.name: np.load(p) for p in (demo.folder / "inputs").glob("*.npy")}
    assert sorted(arrays) == ["classifier_image.npy", "colorization_L.npy", "frames_with_silence.npy",
                              "ssd_detector_image.npy", "unet_image.npy"]  # the front-end's input is not a picture
    for name, model in DEMO_MODELS.items():
        (input_name, shape), = model.inputs.items()
        array = arrays[f"{name}_{input_name}.npy"]
        assert array.dtype == np.float32 and array.shape == shape
        assert -1 <= array.min() and array.max() <= 1 and array.max() - array.min() > 0.5  # a scaled picture
        session = ort.InferenceSession(built[name].SerializeToString(), providers=["CPUExecutionProvider"])
        assert all(np.isfinite(out).all() for out in session.run(None, {input_name: array}))
    picture = make_demo_images(7)["segmentation_256"]  # the workspace's seed
    red_first = arrays["unet_image.npy"][0, 0]
    assert np.allclose(red_first, picture[..., 2] / 127.5 - 1, atol=1e-6), "RGB order, as the models expect"


def test_importing_the_demo_package_stays_cheap():
    code = ("import sys, studio.tools.demo.workspace, studio.tools.demo.models, "
            "studio.tools.demo.images, studio.tools.demo.inputs, studio.tools.demo.layers; "
            "heavy = {'onnx', 'onnxruntime', 'cv2', 'PySide6', 'pyqtgraph'} & set(sys.modules); "
            "assert not heavy, heavy")
    root = Path(studio.__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


def test_tools_add_their_demo_results_and_the_unet_is_shown_last(tmp_path, monkeypatch):
    from studio.tools.demo import extras
    from studio.tools.demo.workspace import ensure_demo_workspace

    calls = []

    def fake_tool(folder, cancel):
        calls.append(folder)
        yield Progress(0.5, "fake tool working")
        result = folder / "fake" / "result.txt"
        result.parent.mkdir(exist_ok=True)
        result.write_text("made by a tool")
        return [result]

    monkeypatch.setattr(extras, "demo_extras", lambda: [("fake", fake_tool)])
    demo = run_job(ensure_demo_workspace(tmp_path / "demo"))
    assert calls == [demo.folder]
    assert demo.show == [demo.folder / "fake" / "result.txt", demo.folder / "models" / "unet.onnx"]
    again = run_job(ensure_demo_workspace(tmp_path / "demo"))  # reused workspace: tools run again
    assert len(calls) == 2 and again.show == demo.show


def test_every_tool_demo_module_has_the_job_function():
    from studio.tools.demo.extras import demo_extras

    for tool, add_to_demo in demo_extras():
        assert callable(add_to_demo), tool


def test_the_demo_gets_a_local_run_configuration_that_benchmarks_the_unet(tmp_path):
    """Run (Shift+F10) has something real to run in the demo: Studio's bench on the U-Net, here."""
    import json
    import shlex

    from studio.runs.config import load_configs
    from studio.tools.bench.demo import CONFIG_NAME, add_to_demo
    from studio.tools.demo.workspace import create_demo_workspace
    from studio.core.workspace import Workspace

    folder = tmp_path / "demo"
    run_job(create_demo_workspace(folder))
    run_job(add_to_demo(folder))
    run_job(add_to_demo(folder))  # idempotent: every --demo start runs it
    configs = load_configs(Workspace.open(folder))
    assert [c.name for c in configs] == [CONFIG_NAME] and configs[0].is_local
    argv = shlex.split(configs[0].command) + ["--json"]
    assert not Path(argv[0]).is_absolute(), "a moved or shared workspace must not name this clone's interpreter"
    # run as a local configuration runs: the folder of the interpreter running Studio first on PATH
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    result = subprocess.run(argv, cwd=folder, capture_output=True, text=True, timeout=300,
                            env={**os.environ, "PATH": path, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert result.returncode == 0, result.stderr
    numbers = json.loads(result.stdout)
    assert numbers["min_ms"] <= numbers["p50_ms"] <= numbers["max_ms"] and numbers["throughput"] > 0
