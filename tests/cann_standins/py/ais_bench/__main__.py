"""Stand-in for ``python3 -m ais_bench`` (and ``msit benchmark``): pure inference on an .om."""
import argparse
import json
import os
import sys
import time

from standin_common import check_om, latencies, no_npu, om_twin, pause, percentile, record, run_twin, say


def _bool(text: str) -> bool:
    if text.lower() in ("1", "true"):
        return True
    if text.lower() in ("0", "false"):
        return False
    raise argparse.ArgumentTypeError(f"{text} is not a boolean")


def main(argv: list[str], prog: str = "ais_bench") -> int:
    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument("--model", "--om-model", "-om", dest="model", required=True)
    parser.add_argument("--input", default="")
    parser.add_argument("--output", default="")
    parser.add_argument("--output_dirname", "--output-dirname", dest="dirname", default="")
    parser.add_argument("--outfmt", default="BIN", choices=["NPY", "BIN", "TXT"])
    parser.add_argument("--loop", type=int, default=1)
    parser.add_argument("--warmup_count", "--warmup-count", dest="warmup", type=int, default=1)
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--batchsize", type=int, default=1)
    parser.add_argument("--display_all_summary", "--display-all-summary", dest="all", type=_bool, default=False)
    parser.add_argument("--acl_json_path", default="", help="an acl.json whose dump section dumps every op")
    args = parser.parse_args(argv)
    if args.loop < 1:
        say("[ERROR] loop must be a positive integer")
        return 1
    if no_npu():
        say(f"[ERROR] acl.rt.set_device failed ret=507033, device={args.device}")
        return 1
    say(f"[INFO] acl init success")
    say(f"[INFO] open device {args.device} success")
    error = check_om(args.model)
    if error:
        say(error)
        return 1
    say(f"[INFO] load model {args.model} success")
    if args.acl_json_path:  # a model from the FP16 device stand-in's atc: run it and dump (standin_device)
        import standin_device

        status = standin_device.dump(args.model, args.input, args.acl_json_path)
        if status:
            return status
    say("[INFO] create model description success")
    say(f"[INFO] warm up {args.warmup} done")
    pause()
    if args.output and args.input and os.path.isdir(args.input) and om_twin(args.model):
        # a folder of inputs: each file once, outputs in OUTPUT/<date_time>/<stem>_<k>.bin, from the ONNX twin
        folder = os.path.join(args.output, args.dirname or time.strftime("%Y_%m_%d-%H_%M_%S"))
        os.makedirs(folder, exist_ok=True)
        if run_twin(args.model, args.input, folder, "ais_bench") != 0:
            return 1
    compute = latencies(args.loop, cold_first=False)
    h2d = [round(0.05 + i * 0.001, 6) for i in range(args.loop)]
    d2h = [round(0.03 + i * 0.0005, 6) for i in range(args.loop)]
    say(f"Inference array Processing: 100%|{'#' * 20}| {args.loop}/{args.loop}")
    say("[INFO] -----------------Performance Summary------------------")

    def line(name: str, values: list[float]) -> str:
        mean = sum(values) / len(values)
        return (f"[INFO] {name} (ms): min = {min(values)}, max = {max(values)}, mean = {mean}, "
                f"median = {percentile(values, 50)}, percentile(99%) = {percentile(values, 99)}")

    if args.all:
        say(line("H2D_latency", h2d))
    say(line("NPU_compute_time", compute))
    if args.all:
        say(line("D2H_latency", d2h))
    mean = sum(compute) / len(compute)
    throughput = 1000 * args.batchsize / mean
    say(f"[INFO] throughput 1000*batchsize.mean({args.batchsize})/NPU_compute_time.mean({mean}): {throughput}")
    say("[INFO] ------------------------------------------------------")
    if args.output:
        os.makedirs(args.output, exist_ok=True)
        stamp = time.strftime("%Y_%m_%d-%H_%M_%S")
        with open(os.path.join(args.output, f"{stamp}_summary.json"), "w") as handle:
            json.dump({"NPU_compute_time": {"mean": mean}, "throughput": throughput}, handle)
    say("[INFO] unload model success, model Id is 1")
    say(f"[INFO] end to reset device {args.device}")
    say("[INFO] end to finalize acl")
    record(prog, {"times": compute, "h2d": h2d, "d2h": d2h})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
