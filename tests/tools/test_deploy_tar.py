"""The lean tar writer produces archives that tar (and tarfile) read back exactly."""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile

import pytest

from studio.targets.transfer.tar_stream import BackgroundSender, TarWriter

MEMBERS = {
    "plain.txt": b"hello\n",
    "dir/sub/empty.bin": b"",
    "unicode/模型-ü.onnx": bytes(range(256)) * 3,
    "x" * 60 + "/" + "y" * 60 + ".txt": b"long name",  # > 100 bytes: PAX header
    "new\nline $(x) 'q'.txt": b"odd",
    "block.bin": b"\x01" * 512,
}


def _archive(chunk_sink) -> None:
    writer = TarWriter(chunk_sink)
    for i, (name, data) in enumerate(MEMBERS.items()):
        writer.add(name, 0o640 + i % 2, 1_700_000_000 + i, io.BytesIO(data), len(data))
    writer.close()


def test_python_tarfile_reads_back_names_data_modes_and_times():
    out = bytearray()
    _archive(out.extend)
    assert len(out) % 512 == 0
    with tarfile.open(fileobj=io.BytesIO(bytes(out)), mode="r:", encoding="utf-8") as tar:
        members = tar.getmembers()
        assert [m.name for m in members] == list(MEMBERS)
        for i, member in enumerate(members):
            assert tar.extractfile(member).read() == MEMBERS[member.name]
            assert member.mode == 0o640 + i % 2 and member.mtime == 1_700_000_000 + i


@pytest.mark.skipif(not shutil.which("tar"), reason="GNU tar not installed")
def test_gnu_tar_extracts_it(tmp_path):
    out = bytearray()
    _archive(out.extend)
    subprocess.run(["tar", "-x", "--no-same-owner", "-f", "-", "-C", str(tmp_path)], input=bytes(out), check=True)
    for name, data in MEMBERS.items():
        assert (tmp_path / name).read_bytes() == data
    assert int((tmp_path / "plain.txt").stat().st_mtime) == 1_700_000_000


def test_background_sender_keeps_order_and_reports_errors():
    got = []
    sender = BackgroundSender(got.append, depth=2)
    for i in range(50):
        sender.put(bytes([i]))
    sender.close()
    assert got == [bytes([i]) for i in range(50)]

    def broken(_chunk):
        raise EOFError("cut")

    sender = BackgroundSender(broken)
    sender.put(b"a")
    with pytest.raises(EOFError):
        for _ in range(100):
            sender.put(b"b")
        sender.close()
    sender.abandon()


@pytest.mark.skipif(not shutil.which("tar"), reason="GNU tar not installed")
@pytest.mark.parametrize("fmt", ["gnu", "pax"])
def test_the_lean_reader_reads_what_gnu_tar_writes(tmp_path, fmt):
    from studio.targets.transfer.tar_read import TarFormatError, TarReader

    for i, (name, data) in enumerate(MEMBERS.items()):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
        (tmp_path / name).chmod(0o640 + i % 2)
    names = b"".join(name.encode() + b"\0" for name in MEMBERS)
    archive = subprocess.run(["tar", "-c", f"--format={fmt}", "-b", "256", "-f", "-", "--null", "--no-recursion",
                              "-T", "-"], input=names, cwd=tmp_path, capture_output=True, check=True).stdout
    source = io.BytesIO(archive)
    source.read = lambda n, read=source.read: read(min(n, 777))  # reads that end mid-header, mid-data
    got = {member.name: (bytes(data), member.mode, member.regular) for member, data in TarReader(source).members()}
    assert got == {name: (data, 0o640 + i % 2, True) for i, (name, data) in enumerate(MEMBERS.items())}
    with pytest.raises(TarFormatError):  # a cut stream is an error, never a shorter file
        list(TarReader(io.BytesIO(archive[:1536])).members())
