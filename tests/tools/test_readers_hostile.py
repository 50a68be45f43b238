"""Hostile inputs that ended readers in tracebacks or hangs, one test each.

A FIFO given as the file, a device, a file past a reader's cap, lone surrogates, values of the
wrong type, deep nesting, a catastrophic metrics pattern: each must end in a UserError that says
what and where (or in a clean value), quickly. A reader that blocks is run in a thread with a
deadline, so a regression fails the test instead of hanging the suite (the FIFO is then opened for
writing, which lets the blocked reader go).
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from studio.core.errors import UserError
SETTINGS_CAP = 16 << 20  # the caps the docs state (docs/architecture.md, "Limits")
DOCUMENT_CAP = 512 << 20

DEADLINE_S = 10


def _outcome(fn, fifo: Path | None = None):
    """What ``fn()`` returned or raised, within :data:`DEADLINE_S` (pytest.fail when it blocks)."""
    box: dict = {}

    def call():
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - the test inspects it
            box["error"] = exc

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(DEADLINE_S)
    if thread.is_alive():
        if fifo is not None:  # a writer appearing releases a reader blocked in open()
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            thread.join(DEADLINE_S)
        pytest.fail(f"the reader was still blocked after {DEADLINE_S} s")
    return box


def _refused(fn, *words: str, fifo: Path | None = None) -> UserError:
    box = _outcome(fn, fifo)
    error = box.get("error")
    assert isinstance(error, UserError), f"expected a UserError, got {box!r}"
    for word in words:
        assert word in str(error), str(error)
    return error


# ---------------------------------------------------------------- a FIFO given as the file
def _readers():
    from studio.core.formats import detect
    from studio.core.toml_store import load_toml
    from studio.tools.accuracy.acl_config import read_acl_config
    from studio.tools.accuracy.npu_dump import read_header
    from studio.tools.accuracy.report_csv import read_csv
    from studio.tools.advisor.model import read_report
    from studio.tools.convert.aipp import load_aipp
    from studio.tools.graph.om_reader import read_om
    from studio.tools.graph.pipeline.document import read_pipeline
    from studio.tools.profiler.csv_tables import read_rows
    from studio.tools.profiler.rank_files import read_json

    return {"detect (graph summary, profile stats, info)": (detect, "model.onnx"),
            "studio.toml / hosts.toml": (load_toml, "studio.toml"),
            "acl.json": (read_acl_config, "acl.json"),
            "NPU dump": (read_header, "Conv2D.conv1.1.0.1700000000000000"),
            "comparison CSV": (read_csv, "accuracy.csv"),
            "advisor report": (read_report, "report.json"),
            "AIPP config": (load_aipp, "aipp.cfg"),
            "OM model": (read_om, "model.om"),
            "pipeline": (read_pipeline, "x.pipeline"),
            "msprof CSV": (lambda p: read_rows(p, "export again"), "op_summary.csv"),
            "cluster JSON": (read_json, "communication.json")}


@pytest.mark.parametrize("name", list(_readers()))
def test_a_fifo_is_refused_without_blocking(name, tmp_path):
    reader, file_name = _readers()[name]
    fifo = tmp_path / file_name
    os.mkfifo(fifo)
    _refused(lambda: reader(fifo), "FIFO", fifo=fifo)


def test_a_device_is_refused_as_a_device():
    from studio.tools.convert.aipp import load_aipp

    _refused(lambda: load_aipp(Path("/dev/null")), "character device", "/dev/null")


# ---------------------------------------------------------------- an open that fails
@pytest.mark.parametrize("name, what, fix", [
    ("AIPP config", "AIPP config", "Check the --insert_op_conf path."),
    ("fusion switch file", "fusion switch file", "Check the --fusion_switch_file path."),
    ("pipeline", "pipeline", "Check the path."),
    ("msprobe mapping", "mapping file", "Check the path."),
    ("studio.toml", "settings file", "Check the file's permissions."),
])
def test_a_file_that_cannot_be_opened_says_why_in_words(name, what, fix, tmp_path):
    """A symlink loop (the open fails with ELOOP): the message names the file kind and the OS's
    reason in words (no "[Errno 40]" and no repeated path), with the reader's fix."""
    import errno

    from studio.core.toml_store import load_toml
    from studio.tools.accuracy.msprobe_compare import read_name_mapping
    from studio.tools.convert.aipp import load_aipp
    from studio.tools.convert.fusion_switch import load_fusion_switch
    from studio.tools.graph.pipeline.document import read_pipeline

    reader = {"AIPP config": load_aipp, "fusion switch file": load_fusion_switch, "pipeline": read_pipeline,
              "msprobe mapping": read_name_mapping, "studio.toml": load_toml}[name]
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    error = _refused(lambda: reader(loop))
    assert (error.what, error.where, error.fix) == (f"Cannot read the {what}: {os.strerror(errno.ELOOP)}", str(loop), fix)


# ---------------------------------------------------------------- files past a cap (sparse: no disk used)
def _sparse(path: Path, size: int) -> Path:
    with path.open("wb") as handle:
        handle.truncate(size)
    return path


@pytest.mark.parametrize("name", ["pipeline", "AIPP config", "ssh config", "studio.toml", "advisor report"])
def test_a_settings_file_past_the_cap_is_refused_before_it_is_read(name, tmp_path):
    from studio.core.toml_store import load_toml
    from studio.remote.ssh_config import SshConfig
    from studio.tools.advisor.model import read_report
    from studio.tools.convert.aipp import load_aipp
    from studio.tools.graph.pipeline.document import read_pipeline

    reader = {"pipeline": read_pipeline, "AIPP config": load_aipp, "ssh config": SshConfig.load,
              "studio.toml": load_toml, "advisor report": read_report}[name]
    cap = DOCUMENT_CAP if name == "advisor report" else SETTINGS_CAP
    path = _sparse(tmp_path / "big", cap + 1)
    error = _refused(lambda: reader(path), "too big", "Studio reads at most")
    assert str(path) in str(error)


# ---------------------------------------------------------------- lone surrogates
def test_surrogates_in_profile_facts_are_replaced(tmp_path):
    from studio.tools.profiler.summary_file import read_summary

    (tmp_path / "studio_profile.json").write_text('{"facts": {"device\\ud800": "cpu\\udfff"}}')
    facts = read_summary(tmp_path)["facts"]
    assert facts == {"device\ufffd": "cpu\ufffd"}
    json.dumps(facts, ensure_ascii=False).encode("utf-8")  # printable, writable


def test_surrogates_in_manifest_op_names_are_replaced(tmp_path):
    from studio.tools.accuracy.dumpset import read_manifest

    _manifest(tmp_path, op_name="conv\\ud800")
    entry = read_manifest(tmp_path).entries[0]
    assert entry.op_name == "conv\ufffd"
    entry.op_name.encode("utf-8")


def test_the_cli_prints_a_lone_surrogate_escaped(tmp_path):
    """A pipeline's names hold "\\ud800" (valid JSON): `studio graph summary` prints them escaped."""
    import subprocess
    import sys

    from shared_fixtures import REPO

    (tmp_path / "a.pipeline").write_text(
        '{"det\\ud800": {"stream_config": {"deviceId": "0"}, "appsrc0": {"factory": "appsrc\\ud800", '
        '"next": "appsink0"}, "appsink0": {"factory": "appsink"}}}')
    proc = subprocess.run([sys.executable, "-m", "studio", "graph", "summary", str(tmp_path / "a.pipeline")],
                          capture_output=True, text=True, errors="replace", timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert proc.returncode == 0 and "appsrc\\ud800" in proc.stdout


# ---------------------------------------------------------------- values of the wrong type
def _manifest(folder: Path, **entry) -> Path:
    tensor = {"op_name": "conv", "op_type": "Conv", "output_index": 0, "tensor": "t", "shape": [1, 2],
              "dtype": "float32", "file": "t.npy"}
    text = json.dumps({"format": "studio-dump", "version": 1, "mode": "fp32", "model": None, "inputs": {},
                       "outputs": [], "tensors": [{**tensor, **{k: "@" + k for k in entry}}]})
    for key, raw in entry.items():  # raw JSON for the value: true, NaN, "\ud800"
        text = text.replace(f'"@{key}"', raw if not raw.startswith("conv") else f'"{raw}"')
    (folder / "manifest.json").write_text(text)
    return folder


@pytest.mark.parametrize(("field", "raw"), [("dtype", "true"), ("shape", "[1, NaN]"), ("shape", '"5"')])
def test_manifest_values_of_the_wrong_type_are_refused(field, raw, tmp_path):
    from studio.tools.accuracy.dumpset import read_manifest

    _refused(lambda: read_manifest(_manifest(tmp_path, **{field: raw})), "manifest", "entry 0")


def _rank(tmp_path: Path, name: str, data) -> object:
    from studio.tools.profiler.cluster.discover import RankDir

    path = tmp_path / name
    path.write_text(json.dumps(data))
    return RankDir(0, tmp_path, "pytorch", str(path), {"communication_json": path, "matrix_json": path})


def test_communication_bandwidth_as_text_names_the_field(tmp_path):
    from studio.tools.profiler.cluster.bandwidth import read_bandwidth

    rank = _rank(tmp_path, "communication.json", {"step1": {"collective": {"hcom_allReduce_1@g": {
        "Communication Bandwidth Info": {"HCCS": {"Transit Size(MB)": "lots", "Transit Time(ms)": 1}}}}}})
    _refused(lambda: read_bandwidth(rank, False), "Transit Size(MB)", "not a number", "communication.json")


def test_communication_matrix_values_as_numbers_name_the_op(tmp_path):
    from studio.tools.profiler.cluster.matrix import read_links

    rank = _rank(tmp_path, "communication_matrix.json", {"step1": {"collective": {"hcom_allReduce_1@g": 5}}})
    _refused(lambda: read_links(rank, False), "hcom_allReduce_1@g", "not an object")


def test_msprobe_shape_as_a_number_reads_as_unknown(tmp_path):
    from studio.tools.accuracy.msprobe_dump import read_msprobe

    (tmp_path / "dump.json").write_text(json.dumps({"task": "statistics", "level": "L1", "data": {
        "Functional.relu.0.forward": {"input_args": [{"type": "torch.Tensor", "dtype": "torch.float32", "shape": 5,
                                                      "Max": 1.0, "Min": 0.0, "Mean": 0.5, "Norm": 1.0}]}}}))
    dump = read_msprobe(tmp_path)
    stats = [s for call in dump.calls for s in call.tensors]
    assert [s.shape for s in stats] == [None]


def test_a_400_digit_csv_locator_is_a_file_that_is_not_there(tmp_path):
    from studio.tools.accuracy.report_csv import read_csv

    path = tmp_path / "accuracy.csv"
    path.write_text("Index,NPUDump,GroundTruth,OpType,Shape,DataType,TargetFile,GoldenFile,CosineSimilarity\n"
                    f"0,conv,conv,Conv,[1],float32,{'9' * 400}.npy,{'8' * 400}.npy,0.99\n")
    result = read_csv(path)
    assert len(result.rows) == 1 and result.rows[0].target_file.endswith("9" * 400 + ".npy")


def test_a_400_digit_manifest_file_name_is_a_message(tmp_path):
    from studio.tools.accuracy.dumpset import read_manifest

    _refused(lambda: read_manifest(_manifest(tmp_path, file=f'"{"9" * 400}.npy"')), "cannot be opened",
             "File name too long")


def test_a_1_mb_csv_field_is_a_message(tmp_path):
    from studio.tools.accuracy.report_csv import read_csv

    path = tmp_path / "accuracy.csv"
    path.write_text("Index,NPUDump,GroundTruth,CosineSimilarity\n" f"0,{'x' * (1 << 20)},conv,0.99\n")
    _refused(lambda: read_csv(path), "cannot be parsed", "field limit")


# ---------------------------------------------------------------- deep nesting, catastrophic patterns
def test_500_deep_inline_tables_in_studio_toml_are_a_message(tmp_path):
    from studio.core.workspace import Workspace

    (tmp_path / "studio.toml").write_text('[workspace]\nname = "w"\ndeep = ' + "{a = " * 500 + "1" + "}" * 500 + "\n")
    _refused(lambda: Workspace.open(tmp_path), "too deeply", "studio.toml")


def test_a_metrics_pattern_that_backtracks_is_stopped(monkeypatch):
    from studio.core import bounded_regex
    from studio.runs.results import parse_metrics

    monkeypatch.setattr(bounded_regex, "LIMIT_S", 1.0)
    # (a+)+b on 26 a's: about 2**26 steps, tens of seconds in-process; the limit stops it at 1 s
    error = _refused(lambda: parse_metrics(["a" * 26 + "!"], r"(?P<name>(a+)+)b(?P<value>\d)"), "took more than 1 s")
    assert "metrics pattern" in str(error)
    # a sane pattern takes the same path and still reads its values
    table = parse_metrics(["image 1: dice: 0.93, iou: 0.87", "done"], r"(?P<name>dice|iou): (?P<value>[0-9.]+)")
    assert table.columns == ["dice", "iou"] and table.rows[0].values == {"dice": 0.93, "iou": 0.87}


# ---------------------------------------------------------------- settings files that grew
def test_ssh_list_of_2000_hosts_parses_each_header_once(studio_home, monkeypatch, capsys):
    """`studio ssh list` over 2,000 hosts: places are indexed once per file (a scan of the file per
    key made it 140 s). The count of header checks is bounded by the file's lines; past the bound
    the test stops at once rather than waiting for a quadratic read to end."""
    from studio.cli import main
    from studio.core import toml_fields

    hosts = 2000
    text = "".join(f'[hosts.box{i}]\nhost = "10.0.0.{i % 250}"\nport = {2200 + i % 50}\nuser = "ops"\n'
                   f'auth = "agent"\n\n[hosts.box{i}.extra]\nroot = "/w{i}"\n\n' for i in range(hosts))
    config = studio_home / "config"
    config.mkdir(parents=True, exist_ok=True)
    (config / "hosts.toml").write_text(text)
    bound = 2 * len(text.splitlines())
    calls = {"n": 0}
    header = toml_fields._HEADER

    class Counting:
        def match(self, line):
            calls["n"] += 1
            if calls["n"] > bound:
                raise AssertionError(f"more than {bound:,} header checks for a file of {bound // 2:,} lines")
            return header.match(line)

    monkeypatch.setattr(toml_fields, "_HEADER", Counting())
    assert main(["ssh", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert len(listed) == hosts
    place = toml_fields.TomlPlace(config / "hosts.toml")
    assert place(("hosts", "box1999"), "port") == f"{config / 'hosts.toml'}, line {9 * 1999 + 3}: [hosts.box1999] port"
