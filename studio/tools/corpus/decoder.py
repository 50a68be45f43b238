"""A GPT-2 decoder with a KV cache, exported here: no wheel on PyPI ships one small enough.

The architecture is transformers' own ``GPT2LMHeadModel`` (eager attention, as exporters use it)
at a small config with weights drawn from seed 0, exported by torch's TorchScript exporter the
way decoders are exported for ONNX Runtime: ``input_ids``, ``attention_mask`` and
``past_key_values.{layer}.{key,value}`` in, ``logits`` and ``present.{layer}.{key,value}`` out,
batch, sequence and past length dynamic, so one file serves the prefill (past length 0) and each
decoding step (past length > 0). The padding mask becomes ``finfo(float32).min`` (-3.4e38) added
to the attention scores, as in every such export. Takes about 2 s.
"""

from __future__ import annotations

import warnings
from pathlib import Path

from studio.tools.corpus.extra import maker_missing

LAYERS, EMBED, HEADS, VOCAB, POSITIONS = 2, 64, 4, 1000, 128
OPSET = 17
# The versions the corpus file was made with (pyproject.toml's test extra pins them): another
# version may trace a different graph.
TORCH, TRANSFORMERS = "2.13.0", "5.23.0"


def input_names() -> list[str]:
    return ["input_ids", "attention_mask"] + [f"past_key_values.{i}.{kv}" for i in range(LAYERS)
                                               for kv in ("key", "value")]


def output_names() -> list[str]:
    return ["logits"] + [f"present.{i}.{kv}" for i in range(LAYERS) for kv in ("key", "value")]


def gpt2_kv_cache(target: Path) -> None:
    """Write the decoder to ``target`` (deterministic: the same file for the same versions)."""
    try:
        import torch
        import transformers
        from transformers import DynamicCache, GPT2Config, GPT2LMHeadModel
    except ImportError as exc:
        raise maker_missing("gpt2_kv", "exported with torch and transformers", exc) from None
    import onnx

    torch.manual_seed(0)
    config = GPT2Config(n_layer=LAYERS, n_embd=EMBED, n_head=HEADS, vocab_size=VOCAB, n_positions=POSITIONS,
                        bos_token_id=0, eos_token_id=0)
    config._attn_implementation = "eager"  # sdpa traces to a different graph; exporters pick eager
    model = GPT2LMHeadModel(config).eval()

    class _Flat(torch.nn.Module):
        """The model with its cache as flat tensors in and out, as ONNX decoders take it."""

        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, *past):
            cache = DynamicCache(config=config)
            for layer in range(LAYERS):
                cache.update(past[2 * layer], past[2 * layer + 1], layer)
            out = self.model(input_ids=input_ids, attention_mask=attention_mask, past_key_values=cache,
                             use_cache=True)
            flat = [out.logits]
            for layer in out.past_key_values.layers:
                flat += [layer.keys, layer.values]
            return tuple(flat)

    # Traced with a non-empty cache (3 past tokens, 4 new): the graph holds the Concat of past and
    # new keys, which an empty cache (past length 0) passes through.
    ids = torch.randint(0, VOCAB, (1, 4))
    mask = torch.ones(1, 7, dtype=torch.int64)
    past = [torch.randn(1, HEADS, 3, EMBED // HEADS) for _ in range(2 * LAYERS)]
    dynamic = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "total_sequence"},
               "logits": {0: "batch", 1: "sequence"}}
    dynamic.update({n: {0: "batch", 2: "past_sequence"} for n in input_names()[2:]})
    dynamic.update({n: {0: "batch", 2: "total_sequence"} for n in output_names()[1:]})
    tmp = target.with_suffix(".tmp.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tracer's advice on Python booleans is about the model's code
        transformers.logging.set_verbosity_error()
        torch.onnx.export(_Flat().eval(), (ids, mask, *past), str(tmp), input_names=input_names(),
                          output_names=output_names(), dynamic_axes=dynamic, opset_version=OPSET, dynamo=False)
    exported = onnx.load(str(tmp))
    exported.doc_string = (f"studio corpus: transformers=={transformers.__version__} GPT2LMHeadModel "
                           f"(n_layer {LAYERS}, n_embd {EMBED}, n_head {HEADS}, vocab {VOCAB}), weights from "
                           f"torch.manual_seed(0), exported by torch=={torch.__version__} with its KV cache")
    onnx.save(exported, str(target))
    tmp.unlink()
