"""This computer's roofs: the best of several measured rounds, cached per machine, measured again on
demand. Every test runs in its own STUDIO_HOME (tests/conftest.py), never the user's cache."""

from __future__ import annotations

import json

import numpy as np
import pytest

from studio.core.jobs import run_job


def test_roofs_are_the_best_of_several_real_rounds():
    from studio.tools.advisor.microbench import RELU_SIZES, measure_job

    device, rows = run_job(measure_job(repeats=1, rounds=2))
    assert len(rows) == 2
    # the peak is a maximum: each figure is the best round's, figure by figure
    flops = np.array([[r["matmul"], r["conv"]] for r in rows])
    assert device.fp32_flops == device.fp16_flops == flops.max()
    bandwidth = np.array([[b for _, b in r["bandwidths"]] for r in rows])
    assert [b for _, b in device.bandwidths] == list(bandwidth.max(axis=0))
    assert [s for s, _ in device.bandwidths] == [2 * s for s in RELU_SIZES]
    assert device.bandwidth == bandwidth.max(axis=0)[-1] and "best of 2 rounds" in device.source


@pytest.fixture
def fake_rounds(monkeypatch):
    """Rounds of made-up figures (the first one low, as on a busy machine), counted."""
    from studio.tools.advisor import microbench, roof_cache

    monkeypatch.setattr(roof_cache, "_SESSION", None)  # nothing measured earlier in this process
    made = []

    def one_round(work, repeats):
        k = len(made)
        row = {"matmul": 10e9 * (1 + k % 3), "conv": 12e9 - k, "bandwidths": [[2 * s, 5e9 * (1 + (k + i) % 4)]
                                                                              for i, s in enumerate(microbench.RELU_SIZES)]}
        made.append(row)
        return row

    monkeypatch.setattr(microbench, "_one_round", one_round)
    monkeypatch.setattr(microbench, "ROUNDS", 5)  # the product's count (the suite sets 1 for real rounds)
    return made


def test_roofs_are_cached_with_date_and_machine_and_reused(fake_rounds, studio_home, monkeypatch):
    from studio.tools.advisor import microbench, roof_cache

    ROUNDS = microbench.ROUNDS
    device, origin = run_job(roof_cache.this_computer_roofs())
    assert len(fake_rounds) == ROUNDS > 1 and origin.startswith(f"measured now, best of {ROUNDS} rounds")
    assert device.fp32_flops == max(max(r["matmul"], r["conv"]) for r in fake_rounds) == 30e9  # round 1 gave 12e9
    path = roof_cache.cache_file()
    assert path.is_relative_to(studio_home)  # the test's STUDIO_HOME, not the user's cache
    data = json.loads(path.read_text())
    assert data["machine"]["cores"] and data["machine"]["cpu"] and data["measured"][:2] == "20"
    assert len(data["rounds"]) == ROUNDS
    again, origin = run_job(roof_cache.this_computer_roofs())  # reused: nothing measured
    assert len(fake_rounds) == ROUNDS and again == device and origin.startswith("cached ")
    run_job(roof_cache.this_computer_roofs(remeasure=True))  # on demand
    assert len(fake_rounds) == 2 * ROUNDS
    data = json.loads(path.read_text())
    data["machine"]["cores"] += 1  # a cache written on another machine is measured anew
    path.write_text(json.dumps(data))
    assert roof_cache.load_cached() is None
    monkeypatch.setattr(roof_cache, "_SESSION", None)  # a new process
    run_job(roof_cache.this_computer_roofs())
    assert len(fake_rounds) == 3 * ROUNDS and roof_cache.load_cached() is not None


def test_advise_remeasure_roof_option(fake_rounds, capsys):
    from studio.cli import main
    from studio.tools.advisor.microbench import ROUNDS
    from studio.tools.advisor.roof_cache import load_cached

    assert main(["advise", "--remeasure-roof"]) == 0
    assert len(fake_rounds) == ROUNDS
    out = capsys.readouterr().out
    assert "this computer: 30.0 GFLOP/s" in out and f"best of {ROUNDS} rounds" in out
    assert load_cached()[0].fp32_flops == 30e9
    assert main(["advise", "--remeasure-roof"]) == 0 and len(fake_rounds) == 2 * ROUNDS


def test_this_computer_in_the_device_table_is_not_a_measurement(tmp_path):
    from studio.tools.advisor.devices import THIS_COMPUTER, Device, load_devices, save_device

    path = save_device(Device(THIS_COMPUTER, 1e9, 1e9, source="measured here long ago"), tmp_path / "d.json")
    assert THIS_COMPUTER not in load_devices(path)  # no date, no machine: the roof cache has the measurement
