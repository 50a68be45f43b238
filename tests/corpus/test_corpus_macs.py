"""MACs of the corpus BERT (paraphrase-MiniLM-L3-v2, PyTorch export, dynamic batch and sequence).

Fetches only minilm_l3, so it runs wherever the corpus runs (CI, ``STUDIO_CORPUS``, ``-m corpus``)
without the rest of the corpus.
"""

from __future__ import annotations

import json
import os

import pytest

from bert_helpers import matmul_macs_by_hand
from corpus_helpers import studio
from studio.tools.corpus.fetch import corpus_dir

pytestmark = pytest.mark.corpus

HEADS = 12  # paraphrase-MiniLM-L3-v2: hidden 384 in 12 heads of 32
SIZES = ("--input-shape", "input_ids=1,128", "--input-shape", "attention_mask=1,128")
# read at collection, before each test gets its own STUDIO_HOME: STUDIO_CORPUS, else the user's corpus
_CORPUS = corpus_dir()


@pytest.fixture(scope="module")
def minilm(request):
    from studio.core.jobs import run_job
    from studio.tools.corpus import manifest
    from studio.tools.corpus.fetch import fetch, model_path

    ci = os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")
    marker = request.config.getoption("-m") or ""
    if not (ci or os.environ.get("STUDIO_CORPUS") or ("corpus" in marker and "not corpus" not in marker)):
        pytest.skip("the corpus runs on CI, with STUDIO_CORPUS set, or with `pytest -m corpus`")
    entry = manifest.entry("minilm_l3")
    run_job(fetch([entry], root=_CORPUS))
    return model_path(entry, _CORPUS)


def _macs(path, *extra):
    proc = studio("graph", "macs", path, *SIZES, "--json", "--top", "1000", *extra)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_minilm_matmuls_sized_from_the_given_sequence_length(minilm):
    import onnx

    given = _macs(minilm)
    assert given["unknown"] == 0 and given["uncounted"] == 0  # was 106 nodes unknown, 49,635 MACs in all
    matmuls = {n.name for n in onnx.load(str(minilm), load_external_data=False).graph.node if n.op_type == "MatMul"}
    counted = sum(row["macs"] for row in given["top"] if row["name"] in matmuls)
    assert counted == matmul_macs_by_hand(minilm, 1, 128, HEADS) == 3 * (4 * 128 * 384 * 384 + 2 * 128 * 384 * 1536
                                                                         + 2 * 12 * 128 * 128 * 32)
    run = _macs(minilm, "--run-shapes")  # the shapes of a real ONNX Runtime run
    assert run["total"] == pytest.approx(given["total"], rel=0.01)
    assert "input_ids: random ids in [0, 30521]" in run["shapes"] and "attention_mask: ones" in run["shapes"]
    assert given["moved"]["unknown"] == 0 and given["moved"]["ops"]["Transpose"] == 12
