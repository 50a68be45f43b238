"""The demo workspace: models that run in ONNX Runtime with the stated shapes, written safely."""

from __future__ import annotations

import numpy as np
import pytest

from cancel_helpers import cancel_at_step
from studio.core.errors import Cancelled, UserError
from studio.core.jobs import CancelToken, run_job
from studio.tools.demo.models import DEMO_MODELS
from studio.tools.demo.journeys import JOURNEY_MODELS
from studio.tools.demo.workspace import (
    DEMO_VERSION,
    MARKER_NAME,
    create_demo_workspace,
    ensure_demo_workspace,
    is_demo_workspace,
)

ort = pytest.importorskip("onnxruntime")


@pytest.fixture(scope="module")
def built():
    return {name: model.build() for name, model in DEMO_MODELS.items()}


def run_model(proto, seed: int = 0) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(seed)
    feeds = {i.name: rng.standard_normal(i.shape).astype(np.float32) for i in session.get_inputs()}
    names = [o.name for o in session.get_outputs()]
    return feeds, dict(zip(names, session.run(None, feeds)))


@pytest.mark.parametrize("name", sorted(DEMO_MODELS))
def test_model_runs_with_the_stated_shapes(built, name):
    spec = DEMO_MODELS[name]
    proto = built[name]
    assert proto.opset_import[0].version == 13 and proto.ir_version == 7
    assert {i.name for i in proto.graph.input} == set(spec.inputs)
    _, outputs = run_model(proto)
    assert {k: v.shape for k, v in outputs.items()} == spec.outputs
    for value in outputs.values():
        assert np.isfinite(value).all()


def test_unet_mask_is_a_softmax_that_is_not_saturated(built):
    _, out = run_model(built["unet"])
    mask = out["mask"]
    np.testing.assert_allclose(mask.sum(axis=1), 1.0, atol=1e-5)
    # Sane activations: the classes are neither all 0/1 (exploded logits) nor all 0.5 (dead net).
    assert 0.02 < mask[:, 0].std() < 0.45
    assert (np.abs(mask - 0.5) < 0.499).mean() > 0.5


def test_detector_scores_and_boxes(built):
    _, out = run_model(built["ssd_detector"])
    np.testing.assert_allclose(out["scores"].sum(axis=-1), 1.0, atol=1e-5)
    assert 0.01 < np.abs(out["boxes"]).mean() < 10


def test_colorization_range_and_classifier_probabilities(built):
    _, out = run_model(built["colorization"])
    ab = out["ab"]
    assert np.abs(ab).max() <= 110.0 and ab.std() > 1.0  # inside the ab range, and not flat
    _, out = run_model(built["classifier"])
    probabilities = out["probabilities"]
    np.testing.assert_allclose(probabilities.sum(), 1.0, atol=1e-5)
    assert probabilities.max() < 0.99


def test_models_are_deterministic(built):
    for name, model in DEMO_MODELS.items():
        assert model.build().SerializeToString() == built[name].SerializeToString(), name


def test_nodes_are_named_by_scope(built):
    names = [n.name for n in built["unet"].graph.node]
    assert len(set(names)) == len(names) and all(names)
    assert any(n.startswith("encoder1/") for n in names) and any(n.startswith("decoder1/") for n in names)
    types = {n.op_type for n in built["unet"].graph.node}
    assert {"Conv", "BatchNormalization", "Relu", "Concat", "Resize", "Softmax"} <= types


def test_workspace_written_once_then_reused(tmp_path):
    target = tmp_path / "demo"
    first = run_job(create_demo_workspace(target))
    assert (target / MARKER_NAME).read_text() == DEMO_VERSION
    models = sorted(p.name for p in first.models_dir.iterdir())
    assert models == sorted(m.file_name for m in (*DEMO_MODELS.values(), *JOURNEY_MODELS.values()))
    pngs = list((target / "images").glob("*.png"))
    assert len(pngs) >= 4 and all(p.read_bytes()[:4] == b"\x89PNG" for p in pngs)
    before = {p: p.stat().st_mtime_ns for p in first.files}
    again = run_job(ensure_demo_workspace(target))
    assert {p: p.stat().st_mtime_ns for p in again.files if p in before} == before, "reused, not rewritten"
    rewritten = run_job(create_demo_workspace(target))  # explicit re-creation is allowed
    assert [p.read_bytes() for p in rewritten.files] == [p.read_bytes() for p in first.files]
    assert not list(target.rglob("*.tmp"))


def test_foreign_folder_is_refused_and_untouched(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(UserError) as info:
        run_job(create_demo_workspace(tmp_path))
    assert info.value.where == str(tmp_path.resolve())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_cancel_leaves_no_partial_files_and_no_marker(tmp_path):
    token = CancelToken()
    target = tmp_path / "demo"
    cancel_after_first_model, _ = cancel_at_step(token, 2)

    with pytest.raises(Cancelled):
        run_job(create_demo_workspace(target, token), cancel=token, on_progress=cancel_after_first_model)
    assert not is_demo_workspace(target), "an interrupted workspace must not look complete"
    assert not list(target.rglob("*.tmp"))
    run_job(ensure_demo_workspace(target))  # the next run completes it
    assert is_demo_workspace(target)
