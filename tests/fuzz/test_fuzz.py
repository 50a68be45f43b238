"""Fuzzing every reader through its CLI: mutated and truncated real files must end in a result or
a clear message — never a traceback, a signal or a hang.

One test per reader. Each variant runs as its own ``python -m studio`` process (two at a time)
with a timeout, so what is tested is exactly what a user runs. Variants are seeded: a failure is
reported with its label (``<index>:<mutation>``) and reproduces from it. Tracebacks in code that
has a known bug are reported as a non-strict xfail naming the bug, so the test turns green
once it is fixed; any other traceback fails.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from mutate import variants

pytestmark = [pytest.mark.fuzz, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
TIMEOUT_S = int(os.environ.get("STUDIO_FUZZ_TIMEOUT", "60"))  # a case still running then is a hang
WORKERS = 2
SAMPLE = 2  # variants per reader outside CI (the full 314 take minutes on 2 cores)

# Where a traceback ends -> the known bug it is (see docs/corpus.md).
# Empty: the tracebacks the fuzz first found (trace decoder, msprof db, dump reader, npy folder) are
# fixed, so any traceback now fails the test.
KNOWN_TRACEBACKS: dict[str, str] = {}


@dataclass
class Reader:
    """One reader: its seed files, mutation kind, variant count and CLI."""

    name: str
    kind: str
    count: int
    argv: object            # (variant path, scratch dir) -> list of CLI args
    folder: bool = False    # the variant is a folder holding the mutated file (npy folder, manifest)


def _shared() -> Path:
    from shared_fixtures import ASCEND_FIXTURES

    return ASCEND_FIXTURES


def _require_shared(path: Path) -> Path:
    if not path.exists():
        from shared_fixtures import missing_fixtures

        missing_fixtures(f"fuzz seed {path} not found (set STUDIO_SHARED to the shared folder)")
    return path


def _onnx_light(name: str) -> Path:
    import onnx.backend.test

    return Path(onnx.backend.test.__file__).parent / "data" / "light" / name


@pytest.fixture(scope="session")
def work(tmp_path_factory) -> Path:
    """Seeds made here: a tiny model, an ORT profile of it, a studio dump, an NPU dump."""
    root = tmp_path_factory.mktemp("fuzz")
    from accuracy_helpers import chain_model, write_npu_dump, write_npy_dump

    model = root / "chain.onnx"
    chain_model(model)
    rng = np.random.default_rng(0)
    write_npy_dump(root / "npy_good", [(f"op{i}", rng.standard_normal((2, 3, 4)).astype(np.float32)) for i in range(4)])
    write_npu_dump(root / "npu", "Conv2D", "conv1/Conv2D", [(rng.standard_normal((1, 20, 5, 6)).astype(np.float16), 2)],
                   [(rng.standard_normal((1, 20, 5, 6)).astype(np.float32), 3)])
    env = dict(os.environ, PYTHONPATH=str(REPO))
    for args in (["dump", model, "-o", root / "dump_good"],
                 ["profile", "run", model, "-o", root / "prof", "--iterations", "2", "--warmup", "0"]):
        subprocess.run([sys.executable, "-m", "studio", *map(str, args)], check=True, env=env, capture_output=True,
                       timeout=120)
    # an AIPP config needs an image model: 1x3x8x8 -> Conv
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(rng.standard_normal((2, 3, 1, 1)).astype(np.float32), "w")
    graph = helper.make_graph([helper.make_node("Conv", ["images", "w"], ["out"], name="conv")], "img",
                              [helper.make_tensor_value_info("images", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 2, 8, 8])], [w])
    import onnx

    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), root / "image.onnx")
    subprocess.run([sys.executable, "-m", "studio", "compare", str(root / "dump_good"), str(root / "dump_good"),
                    "-o", str(root / "accuracy.csv")], check=True, env=env, capture_output=True, timeout=120)
    _config_seeds(root / "config")
    return root


MARKER = "/tmp/studio-fuzz-match-exec-ran"  # a Match exec command that must never run


def _config_seeds(folder: Path) -> None:
    """Settings files as people write them: hosts (a jump, a key, an extra table), deployments with
    excludes, a workspace's run configurations, an ssh config with Include, Match and a Match exec."""
    folder.mkdir()
    (folder / "hosts.toml").write_text(
        '[hosts.bastion]\nhost = "10.0.0.1"\nuser = "ops"\nauth = "agent"\n\n'
        '[hosts.npu-box]\nhost = "192.168.1.20"\nport = 2222\nuser = "HwHiAiUser"\nauth = "key"\n'
        'key_file = "~/.ssh/id_npu"\nproxy_jump = "bastion"\ntoolkit = "/usr/local/Ascend/ascend-toolkit/latest"\n\n'
        '[hosts.npu-box.extra]\ndeploy_root = "/home/HwHiAiUser/work"\n')
    (folder / "deployments.toml").write_text(
        '[deployments.facemask]\nhost = "npu-box"\nlocal = "/tmp/facemask"\nremote = "/home/HwHiAiUser/facemask"\n'
        'excludes = ["*.om", "build/", "!keep.om", "data/**/[a-z]*.bin", "\\\\#literal"]\n\n'
        '[deployments.other]\nhost = "bastion"\nlocal = "/tmp/other"\nremote = "~/other"\n')
    (folder / "studio.toml").write_text(
        '[workspace]\nname = "fuzz"\nformat = 1\n\n'
        '[[run]]\nname = "facemask"\ntarget = "npu-box"\nworkdir = "/home/HwHiAiUser/facemask/out"\n'
        'command = "./main ../data/test.jpg"\ntoolkit = "/usr/local/Ascend/ascend-toolkit/latest"\n'
        'upload = "facemask"\nenv = { ASCEND_GLOBAL_LOG_LEVEL = "1", OMP_NUM_THREADS = 4 }\n\n'
        '[[run]]\nname = "local"\ncommand = "python3 infer.py --batch 2"\n')
    (folder / "ssh_config").write_text(
        "# lab machines\nHost lab\n    HostName 10.1.2.3\n    Port 2202\n    User HwHiAiUser\n"
        "    IdentityFile ~/.ssh/id_lab\n    ProxyJump bastion\n\n"
        f'Match exec "touch {MARKER}"\n    User exec-ran\n\n'
        "Match originalhost lab,lab2 !user root\n    ServerAliveInterval 10\n\n"
        "Host npu-*\n    User ops\n    Port 22022\n\nHost *\n    ServerAliveInterval 30\n")


def _seeds(reader: str, work: Path) -> list[Path]:
    asc = _shared()
    if reader == "onnx":
        return [_onnx_light("light_squeezenet.onnx"), _onnx_light("light_inception_v1.onnx"), work / "chain.onnx"]
    if reader == "om":
        return [_require_shared(asc / "om" / n) for n in ("root_model.om", "dynamic_and_static_graph_without_unfold.om",
                                                           "flow_model.om")]
    if reader == "trace":
        return [_require_shared(asc / "msprof" / "trace_view_tiny.json"), work / "prof" / "onnxruntime_profile.json",
                work / "prof" / "trace_view.json"]
    if reader == "msprof_csv":
        return [_require_shared(asc / "msprof" / "op_summary_legacy_header.csv"),
                _require_shared(asc / "pytorch_npu" / "op_statistic.csv")]
    if reader == "msprof_db":
        return [_require_shared(asc / "msprof" / "msprof_0.db")]
    if reader == "npu_dump":
        return sorted((work / "npu").iterdir())
    if reader == "npy_folder":
        return sorted((work / "npy_good").glob("*.npy"))[:2]
    if reader == "dump_manifest":
        return [work / "dump_good" / "manifest.json"]
    if reader == "aipp_cfg":
        return [_require_shared(asc / "cfg" / n) for n in ("aipp_rgb_static.cfg", "aipp_yuv420sp_csc.cfg")]
    if reader == "acl_json":
        return [_require_shared(asc / "cfg" / "acl_dump.json")]
    if reader in CONFIG_FILES:
        return [work / "config" / CONFIG_FILES[reader]]
    if reader == "profile_summary":
        return [work / "prof" / "studio_profile.json"]
    if reader == "accuracy_csv":
        return [work / "accuracy.csv"]
    real = _shared() / "real"
    if reader == "pipeline":
        return [_require_shared(real / "mindx_pipeline" / "mindxsdk-referenceapps" / "mxVision" / "YOLOv7Detection"
                                / "pipeline" / "Sample.pipeline")]
    if reader == "msprobe_dump":
        return [_require_shared(_msprobe_root() / "dump.json")]
    rank0 = _cluster_root() / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    if reader == "cluster_csv":
        return [_require_shared(rank0 / "step_trace_time.csv")]
    if reader == "cluster_json":
        return [_require_shared(rank0 / "communication_matrix.json"), _require_shared(rank0 / "communication.json")]
    if reader == "memory_csv":
        return [_require_shared(rank0 / "memory_record.csv"), _require_shared(rank0 / "operator_memory.csv")]
    raise KeyError(reader)


def _msprobe_root() -> Path:
    return _shared() / "real" / "msprobe" / "quick_start_gpu_dump_resnet" / "gpu_dump" / "step0" / "proc2016"


def _cluster_root() -> Path:
    return _shared() / "real" / "cluster_pytorch" / "msinsight_text_2rank_level2" / "level2"


# reader -> its seed in work/config; each variant is written where the CLI reads it (_materialize)
CONFIG_FILES = {"hosts_toml": "hosts.toml", "deployments_toml": "deployments.toml", "studio_toml": "studio.toml",
                "ssh_config": "ssh_config"}


def _argv(reader: str, work: Path):
    return {
        "onnx": lambda f, tmp: ["graph", "summary", f],
        "om": lambda f, tmp: ["graph", "summary", f],
        "trace": lambda f, tmp: ["profile", "stats", f, "--no-cache"],
        "msprof_csv": lambda f, tmp: ["profile", "stats", f, "--no-cache"],
        "msprof_db": lambda f, tmp: ["profile", "stats", f, "--no-cache"],
        "npu_dump": lambda f, tmp: ["dump", "convert", f, "-o", tmp / "out"],
        "npy_folder": lambda f, tmp: ["compare", work / "npy_good", f],
        "dump_manifest": lambda f, tmp: ["compare", work / "dump_good", f],
        "aipp_cfg": lambda f, tmp: ["convert", work / "image.onnx", "--insert-op-conf", f, "-o", tmp / "out.onnx"],
        "acl_json": lambda f, tmp: ["info", f],
        "cluster_csv": lambda f, tmp: ["profile", "cluster", f, "--json"],
        "cluster_json": lambda f, tmp: ["profile", "cluster", f, "--json"],
        "memory_csv": lambda f, tmp: ["profile", "memory", f, "--json"],
        # the variant's STUDIO_HOME is tmp/home (see _env): hosts.toml and deployments.toml are read from it
        "hosts_toml": lambda f, tmp: ["ssh", "list", "--json"],
        "deployments_toml": lambda f, tmp: ["deploy", "list", "--json"],
        "studio_toml": lambda f, tmp: ["run", "--list", "--workspace", f],
        "ssh_config": lambda f, tmp: ["ssh", "add", "imported", "--from-ssh-config", "lab", "--ssh-config", f],
        "profile_summary": lambda f, tmp: ["profile", "stats", f, "--no-cache"],
        "accuracy_csv": lambda f, tmp: ["advise", "--accuracy", f, "--json"],
        "pipeline": lambda f, tmp: ["graph", "summary", f],
        "msprobe_dump": lambda f, tmp: ["compare", _msprobe_root(), f],
    }[reader]


READERS = [  # name, mutation kind, variants, variant is a folder
    ("onnx", "binary", 45, False), ("om", "binary", 36, False), ("trace", "json", 45, False),
    ("msprof_csv", "text", 32, False), ("msprof_db", "binary", 36, False), ("npu_dump", "binary", 32, False),
    ("npy_folder", "binary", 24, True), ("dump_manifest", "json", 24, True), ("aipp_cfg", "text", 24, False),
    ("acl_json", "json", 16, False), ("cluster_csv", "text", 16, True), ("cluster_json", "json", 16, True),
    ("memory_csv", "text", 16, True),
    ("hosts_toml", "text", 24, False), ("deployments_toml", "text", 24, False), ("studio_toml", "text", 24, True),
    ("ssh_config", "text", 24, False), ("profile_summary", "json", 24, True), ("accuracy_csv", "text", 16, False),
    ("pipeline", "json", 16, False), ("msprobe_dump", "json", 16, True),
]


def _materialize(reader: str, seed: Path, mutant: bytes, where: Path, work: Path) -> Path:
    """Write the mutant where the reader expects it (a folder for the folder readers)."""
    where.mkdir(parents=True, exist_ok=True)
    if reader == "npy_folder":
        folder = where / "dump"
        shutil.copytree(work / "npy_good", folder)
        (folder / seed.name).write_bytes(mutant)
        return folder
    if reader == "dump_manifest":
        folder = where / "dump"
        shutil.copytree(work / "dump_good", folder)
        (folder / "manifest.json").write_bytes(mutant)
        return folder
    if reader in ("cluster_csv", "cluster_json", "memory_csv"):  # a 2-rank folder with rank 0's file mutated
        folder = where / "cluster"
        shutil.copytree(_cluster_root(), folder)
        (folder / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / seed.name).write_bytes(mutant)
        return folder
    if reader in ("hosts_toml", "deployments_toml"):
        config = where / "home" / "config"  # STUDIO_HOME=where/home (see _env)
        config.mkdir(parents=True)
        for name in ("hosts.toml", "deployments.toml"):
            (config / name).write_bytes(mutant if name == seed.name else (work / "config" / name).read_bytes())
        return config / seed.name
    if reader == "studio_toml":
        (where / "studio.toml").write_bytes(mutant)
        return where
    if reader == "profile_summary":
        folder = where / "prof"
        shutil.copytree(work / "prof", folder)
        (folder / seed.name).write_bytes(mutant)
        return folder
    if reader == "msprobe_dump":  # a copy of the rank folder with dump.json mutated
        folder = where / "proc"
        shutil.copytree(_msprobe_root(), folder, copy_function=shutil.copyfile)
        folder.chmod(0o755)  # the shared copy is read-only
        (folder / seed.name).write_bytes(mutant)
        return folder
    path = where / seed.name  # keep the name: NPU dump names and suffixes carry meaning
    path.write_bytes(mutant)
    return path


def target_file(reader: str, seed: Path, variant: Path) -> Path:
    """The file a variant's mutant was written to (``variant`` is what :func:`_materialize` returned)."""
    if reader == "cluster_csv" or reader in ("cluster_json", "memory_csv"):
        return variant / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / seed.name
    if reader == "studio_toml":
        return variant / "studio.toml"
    if reader == "dump_manifest":
        return variant / "manifest.json"
    if reader in ("npy_folder", "profile_summary", "msprobe_dump"):
        return variant / seed.name
    return variant


def _run(args: list, home: Path | None = None) -> tuple[int | None, str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    if home is not None:  # the variant's own per-user folder (its hosts.toml, deployments.toml, ...)
        env["STUDIO_HOME"] = str(home)
    try:
        proc = subprocess.run([sys.executable, "-m", "studio", *map(str, args)], capture_output=True, text=True,
                              timeout=TIMEOUT_S, env=env, stdin=subprocess.DEVNULL, errors="replace")
    except subprocess.TimeoutExpired:
        return None, f"hang: no answer within {TIMEOUT_S} s"
    return proc.returncode, proc.stdout[-2000:] + tail(proc.stderr)


def tail(text: str, keep: int = 4000) -> str:
    """The end of ``text``, keeping its first line of a traceback (a RecursionError's traceback is
    thousands of frames long: its tail alone would not say it is one)."""
    if len(text) <= keep:
        return text
    start = text.find("Traceback (most recent call last)")
    head = text[start:start + 200] + "\n[...]\n" if start >= 0 else ""
    return head + text[-keep:]


def _where(text: str) -> str:
    """The last frame of a traceback in Studio's own code (else the last frame): 'dir/file.py:line'."""
    frames = re.findall(r'File "([^"]+)", line (\d+)', text)
    if not frames:
        return "?"
    ours = [f for f in frames if "/studio/" in f[0].replace("\\", "/")]
    path, line = (ours or frames)[-1]
    return f"{'/'.join(Path(path).parts[-2:])}:{line}"


def crash(code: int | None, text: str) -> str | None:
    """What went wrong with a run that ended with ``code`` and printed ``text`` (None: a clean end, a
    message or not): it did not end (``code`` None, ``text`` says how), a signal killed it, or
    Python printed a traceback (where in Studio's code, and its last line)."""
    if code is None:
        return text
    if code < 0:
        return f"killed by signal {-code}"
    if "Traceback (most recent call last)" in text:
        return f"traceback at {_where(text)}: {text.strip().splitlines()[-1][:200]}"
    return None


def _full(config) -> bool:
    """All variants on CI, with STUDIO_FUZZ=1 or `-m fuzz`; a developer's run samples a few per reader."""
    ci = os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")
    marker = config.getoption("-m") or ""
    return ci or bool(os.environ.get("STUDIO_FUZZ")) or ("fuzz" in marker and "not fuzz" not in marker)


@pytest.mark.parametrize(("reader", "kind", "count", "folder"), READERS, ids=[r[0] for r in READERS])
def test_fuzz(reader, kind, count, folder, work, tmp_path, request):
    if not _full(request.config):
        count = SAMPLE
    seeds = _seeds(reader, work)
    argv = _argv(reader, work)
    jobs = []
    per_seed = -(-count // len(seeds))
    for s_index, seed in enumerate(seeds):
        data = seed.read_bytes()
        seed_value = zlib.crc32(f"{reader}:{seed.name}".encode())
        for label, mutant in variants(data, per_seed, seed_value, kind):
            if len(jobs) >= count:
                break
            where = tmp_path / f"v{len(jobs)}"
            path = _materialize(reader, seed, mutant, where, work)
            jobs.append((f"{seed.name} {label}", argv(path, where), where / "home"))
    Path(MARKER).unlink(missing_ok=True)
    with ThreadPoolExecutor(WORKERS) as pool:
        results = list(pool.map(lambda job: (job[0], job[1], *_run(job[1], job[2])), jobs))
    assert not Path(MARKER).exists(), "a Match exec command of an ssh configuration was run"
    unknown, known = [], []
    for label, args, code, text in results:
        bad = crash(code, text)
        if bad is None:
            continue
        cmd = "studio " + " ".join(map(str, args))
        bug = next((b for f, b in KNOWN_TRACEBACKS.items() if "traceback" in bad and f in _where(text)), None)
        (known if bug else unknown).append(f"[{label}] {bad}\n    {cmd}" + (f"\n    known: {bug}" if bug else ""))
    print(f"\n{reader}: {len(results)} variants, {len(unknown)} unexplained failures, {len(known)} known bugs")
    for line in known + unknown:
        print("  " + line)
    assert not unknown, f"{len(unknown)} of {len(results)} {reader} variants failed:\n" + "\n".join(unknown[:20])
    if known:
        pytest.xfail(f"{len(known)} of {len(results)} variants hit known bugs: "
                     + "; ".join(sorted({k.split('known: ')[-1] for k in known})))
