"""msame and ais_bench output parsing, on the tools' documented output."""

from __future__ import annotations

import numpy as np
import pytest

from studio.core.errors import UserError
from studio.tools.bench.parsers import parse_ais_bench, parse_msame
from studio.core.serial import to_json

MSAME = """[INFO] acl init success
[INFO] open device 0 success
[INFO] load model /home/HwHiAiUser/road.om success
[INFO] model execute success
Inference time: 2.01ms
[INFO] model execute success
Inference time: 1.58ms
[INFO] model execute success
Inference time: 1.575ms
[INFO] model execute success
Inference time: 1.581ms
[INFO] output data success
Inference average time: 1.686500 ms
Inference average time without first time: 1.578667 ms
[INFO] unload model success, model Id is 1
[INFO] Execute sample success
"""

MSAME_SPACED = """Inference average time : 10.66 ms
Inference average time without first time: 10.66 ms
[INFO] unload model success, model Id is 1
"""

AIS_ALL = """[INFO] -----------------Performance Summary------------------
[INFO] H2D_latency (ms): min = 0.7932186126708984, max = 0.7932186126708984, mean = 0.7932186126708984, median = 0.7932186126708984, percentile(99%) = 0.7932186126708984
[INFO] NPU_compute_time (ms): min = 59.518001556396484, max = 60.215999603271484, mean = 59.75496997833252, median = 59.730499267578125, percentile(99%) = 60.15362987518311
[INFO] D2H_latency (ms): min = 98.02532196044922, max = 98.02532196044922, mean = 98.02532196044922, median = 98.02532196044922, percentile(99%) = 98.02532196044922
[INFO] throughput 1000*batchsize(1)/NPU_compute_time.mean(59.75496997833252): 16.73500966300553
[INFO] ------------------------------------------------------
"""

AIS_TWO_DEVICES = """[INFO] -----------------Performance Summary------------------
[INFO] NPU_compute_time (ms): min = 2.4769999980926514, max = 3.937000036239624, mean = 3.5538000106811523, median = 3.7230000495910645, percentile(99%) = 3.936680030822754
[INFO] throughput 1000*batchsize.mean(1)/NPU_compute_time.mean(3.5538000106811523): 281.38893494131406
[INFO] ------------------------------------------------------
[INFO] -----------------Performance Summary------------------
[INFO] NPU_compute_time (ms): min = 3.3889999389648438, max = 3.9230000972747803, mean = 3.616000032424927, median = 3.555000066757202, percentile(99%) = 3.9134000968933105
[INFO] throughput 1000*batchsize.mean(1)/NPU_compute_time.mean(3.616000032424927): 276.5486701
[INFO] ------------------------------------------------------
"""

AIS_THREADS = """[INFO] -----------------Performance Summary------------------
[INFO] NPU_compute_time (ms): mean = 4.815102501598465
[INFO] throughput: 13291.513519962238
"""


def test_msame_mean_without_first_and_per_loop_stats():
    r = parse_msame(MSAME, "road.om")
    assert r.compute.mean == pytest.approx(1.578667)
    loops = [1.58, 1.575, 1.581]  # the first (cold) loop is left out, as msame's own figure does
    assert r.latencies_ms == loops
    assert r.compute.median == pytest.approx(float(np.percentile(loops, 50)))
    assert r.compute.p99 == pytest.approx(float(np.percentile(loops, 99)))
    assert (r.compute.min, r.compute.max) == (1.575, 1.581)
    assert r.loops == 4 and r.warmup == 1
    assert r.throughput == pytest.approx(1000 / 1.578667)
    assert any("computed by Studio" in n for n in r.notes)


def test_msame_spaced_colon_and_no_loop_lines():
    r = parse_msame(MSAME_SPACED)
    assert r.compute.mean == 10.66 and r.compute.median is None and to_json(r)["p99_ms"] is None
    assert any("p50 / p99 / min / max unknown" in n for n in r.notes)
    plain = parse_msame("Inference average time: 3.5 ms\n")
    assert plain.compute.mean == 3.5


def test_msame_without_numbers_is_a_user_error():
    with pytest.raises(UserError, match="no \"Inference average time\""):
        parse_msame("[ERROR] load model from file failed, model file is x.om\n", "x.om")


def test_ais_bench_full_summary():
    (r,) = parse_ais_bench(AIS_ALL, "swin.om")
    d = to_json(r)
    assert d["mean_ms"] == 59.75496997833252 and d["p50_ms"] == 59.730499267578125
    assert d["p99_ms"] == 60.15362987518311 and d["min_ms"] == 59.518001556396484
    assert d["max_ms"] == 60.215999603271484 and d["throughput"] == 16.73500966300553
    assert d["h2d_ms"]["mean"] == 0.7932186126708984 and d["d2h_ms"]["p99"] == 98.02532196044922


def test_ais_bench_throughput_wording_varies_and_devices():
    first, second = parse_ais_bench(AIS_TWO_DEVICES)
    assert first.throughput == 281.38893494131406 and second.throughput == 276.5486701
    assert second.compute.median == 3.555000066757202 and "summary 2 of 2" in second.notes[-1]
    (threads,) = parse_ais_bench(AIS_THREADS)
    assert threads.compute.mean == 4.815102501598465 and threads.compute.p99 is None
    assert threads.throughput == 13291.513519962238


def test_ais_bench_without_summary_is_a_user_error():
    with pytest.raises(UserError, match="NPU_compute_time"):
        parse_ais_bench("[ERROR] load model from file failed\n")
