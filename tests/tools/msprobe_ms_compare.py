"""Run msprobe's own compare engine on two MindSpore dumps where MindSpore is not installed.

``msprobe compare`` on MindSpore dumps imports ``msprobe.mindspore``, whose package imports
MindSpore itself. Its compare is msprobe's common ``Comparator`` with a reader of ``.npy``
files; this script builds the same ``Comparator`` as ``ms_compare`` (mindstudio-probe 26.2) and
re-states only that reader (``load_npy`` then ``np.squeeze``, msprobe's ``read_npy_data``).

Usage: python msprobe_ms_compare.py TARGET/dump.json GOLDEN/dump.json OUTPUT_DIR
"""

import os
import sys

import numpy as np
from msprobe.core.common.file_utils import load_npy
from msprobe.core.compare.acc_compare import Comparator, setup_comparison
from msprobe.core.compare.config import MappingConfig, ModeConfig


def _read_npy(folder, name):
    return np.squeeze(load_npy(os.path.join(folder, name))) if name else None


def read_real_data(paths: dict, cross_frame, backend):
    """msprobe.mindspore.compare.ms_compare.read_real_data for two MindSpore dumps."""
    return (_read_npy(paths["npu_dir"], paths["npu_data_name"]), _read_npy(paths["bench_dir"], paths["bench_data_name"]))


def main(target: str, golden: str, output: str) -> None:
    param = {"npu_path": target, "bench_path": golden, "is_print_compare_log": True}
    config = setup_comparison(param, output)
    mode = ModeConfig(stack_mode=config.stack_mode, fuzzy_match=config.fuzzy_match, xlsx=config.xlsx,
                      dump_mode=config.dump_mode, compared_file_type=config.compared_file_type)
    mapping = MappingConfig(config.cell_mapping, config.api_mapping, config.data_mapping)
    Comparator(read_real_data, mode, mapping, False).compare_core(param, output, suffix=config.suffix)


if __name__ == "__main__":
    main(*sys.argv[1:4])
