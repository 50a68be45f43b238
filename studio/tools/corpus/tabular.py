"""A scikit-learn pipeline with a string column, converted by skl2onnx: no wheel on PyPI ships one.

A table of a colour (strings ``red``/``green``/``blue``) and two numbers is one-hot encoded and
passed through (ColumnTransformer), then classified into 3 classes by a random forest. skl2onnx
writes ``OneHotEncoder``, ``Concat``, ``TreeEnsembleClassifier`` and ``ZipMap`` (ai.onnx.ml): a
string input, an int64 label and a sequence of maps, the shape of every tabular model users
convert. Trained on a seeded synthetic table; takes about 2 s.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from studio.tools.corpus.extra import maker_missing

COLOURS = ("red", "green", "blue")
ROWS, TREES, DEPTH = 400, 10, 4


def synthetic_table(rows: int = ROWS, seed: int = 0) -> dict[str, np.ndarray]:
    """The training table: colour, size, weight columns and the class ``y`` (0, 1 or 2)."""
    rng = np.random.default_rng(seed)
    colour = rng.choice(np.array(COLOURS), rows)
    size = rng.random(rows).astype(np.float32)
    weight = rng.random(rows).astype(np.float32)
    y = (((colour == "red") & (size > 0.3)) | (weight > 0.8)).astype(np.int64) + (size > 0.9)
    return {"color": colour, "size": size, "weight": weight, "y": y}


def string_pipeline(target: Path) -> None:
    """Write the converted pipeline to ``target`` (deterministic for the pinned versions)."""
    try:
        import pandas as pd
        import skl2onnx
        import sklearn
        from skl2onnx import convert_sklearn
        from skl2onnx.common.data_types import FloatTensorType, StringTensorType
        from sklearn.compose import ColumnTransformer
        from sklearn.ensemble import RandomForestClassifier
        from sklearn.pipeline import Pipeline
        from sklearn.preprocessing import OneHotEncoder
    except ImportError as exc:
        raise maker_missing("string_pipeline", "made with scikit-learn and skl2onnx", exc) from None
    import onnx

    table = synthetic_table()
    frame = pd.DataFrame({k: v for k, v in table.items() if k != "y"})
    pipeline = Pipeline([
        ("prep", ColumnTransformer([("onehot", OneHotEncoder(handle_unknown="ignore"), ["color"])],
                                   remainder="passthrough")),
        ("forest", RandomForestClassifier(n_estimators=TREES, max_depth=DEPTH, random_state=0, n_jobs=1)),
    ])
    pipeline.fit(frame, table["y"])
    model = convert_sklearn(pipeline, initial_types=[("color", StringTensorType([None, 1])),
                                                     ("size", FloatTensorType([None, 1])),
                                                     ("weight", FloatTensorType([None, 1]))],
                            target_opset={"": 17, "ai.onnx.ml": 3})
    model.graph.name = "string_pipeline"  # skl2onnx names the graph with a random uuid
    model.doc_string = (f"studio corpus: scikit-learn=={sklearn.__version__} pipeline (one-hot colour + 2 numbers "
                        f"-> random forest of {TREES} trees) trained on a seeded synthetic table, converted by "
                        f"skl2onnx=={skl2onnx.__version__}")
    onnx.checker.check_model(model)
    tmp = target.with_suffix(".tmp.onnx")
    onnx.save(model, str(tmp))
    tmp.replace(target)
