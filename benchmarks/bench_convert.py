"""Local conversion of the demo U-Net: ours against ONNX Runtime's offline optimiser (and
onnxconverter-common's FP16 converter when installed), measured in the same run.

Figures (seconds, median of the runs, file in -> file out):
* fold (FP32): our passes (Conv+BN folding, constant folding, identity removal) vs ORT's basic
  graph optimisations saved through ``SessionOptions.optimized_model_filepath``.
* fold + FP16: ours vs ORT's offline optimisation followed by
  ``onnxconverter_common.float16.convert_float_to_float16(keep_io_types=True)``.

Peers are not project dependencies: ``pip install onnxconverter-common`` into .venv for the
second figure (it is skipped with a note otherwise).
"""

from __future__ import annotations

import argparse
import atexit
import json
import shutil
import sys
import tempfile
from pathlib import Path

from bench_common import median_time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer runs")
    args = parser.parse_args()
    runs = 3 if args.quick else 7

    import onnx
    import onnxruntime as ort

    from studio.core.jobs import run_job
    from studio.tools.convert.convert import convert_model
    from studio.tools.convert.options import ConvertOptions
    from studio.tools.demo.models import build_unet

    folder = Path(tempfile.mkdtemp(prefix="bench_convert_"))
    atexit.register(shutil.rmtree, folder, True)  # the models written (~30 MB) go with the run
    source = folder / "unet.onnx"
    onnx.save(build_unet(), source)

    def ours(output_type: str):
        run_job(convert_model(ConvertOptions(model=source, output=folder / f"ours_{output_type}.onnx",
                                             output_type=output_type, report=folder / "r.json")))

    def ort_optimise(target: Path) -> None:
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(target)
        ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])

    ours("FP32")  # warm up imports for both sides
    ort_optimise(folder / "peer_warm.onnx")
    rows = [{
        "figure": "convert U-Net: fold (FP32)", "unit": "s",
        "ours": median_time(lambda: ours("FP32"), runs),
        "peer": median_time(lambda: ort_optimise(folder / "peer_fp32.onnx"), runs),
        "peer_name": "onnxruntime offline basic optimisation",
        "goal": "ours <= 2x peer",
    }]
    try:
        import warnings

        from onnxconverter_common import float16

        warnings.filterwarnings("ignore", module="onnxconverter_common")
    except ImportError:
        print("onnxconverter-common not installed: FP16 figure skipped", file=sys.stderr)
    else:
        def peer_fp16() -> None:
            target = folder / "peer_opt.onnx"
            ort_optimise(target)
            model = float16.convert_float_to_float16(onnx.load(str(target)), keep_io_types=True)
            onnx.save(model, str(folder / "peer_fp16.onnx"))

        peer_fp16()
        rows.append({
            "figure": "convert U-Net: fold + FP16", "unit": "s",
            "ours": median_time(lambda: ours("FP16"), runs),
            "peer": median_time(peer_fp16, runs),
            "peer_name": "onnxruntime offline + onnxconverter-common float16",
            "goal": "ours <= 2x peer",
        })
    for row in rows:
        print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
