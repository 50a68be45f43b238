"""One way to print a size, in powers of 1024 or of 1000."""

from __future__ import annotations

import pytest

from studio.core.units import human_size


@pytest.mark.parametrize("size, text", [
    (0, "0 B"), (512, "512 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (3000, "2.9 KiB"),
    (2_000_000, "1.9 MiB"), (5 * 2**30, "5.0 GiB"), (3 * 2**40, "3.0 TiB"), (2**60, "1024.0 PiB"),
    (512.0, "512 B"), (-2048, "-2.0 KiB"),
])
def test_binary_sizes(size, text):
    assert human_size(size) == text


@pytest.mark.parametrize("size, text", [
    (999, "999 B"), (79_800, "79.8 KB"), (102_100_000, "102.1 MB"), (-2_500_000, "-2.5 MB"),
    (4 * 10**12, "4.0 TB"),
])
def test_decimal_sizes(size, text):
    assert human_size(size, decimal=True) == text


def test_every_module_uses_the_one_human_size():
    """The copies that printed sizes by themselves are gone: each caller imports this one."""
    import studio.commands.deploy as deploy_cli
    import studio.core.model_inputs as model_inputs
    import studio.tools.convert.rewrite as rewrite
    import studio.tools.deploy.sync as sync
    import studio.tools.profiler.msprof_reader as msprof_reader

    for module in (deploy_cli, model_inputs, rewrite, sync, msprof_reader):
        assert getattr(module, "human_size", None) is human_size, module.__name__
