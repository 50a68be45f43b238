"""msprof-analyze advisor as the engine for Ascend profiling data, run as a subprocess.

``msprof-analyze advisor all -d DIR -o OUT -l en`` (Apache-2.0, ``pip install "studio-workbench[ascend]"``)
runs about 25 checkers over the timeline, kernel details and communication of a PyTorch-NPU
``ASCEND_PROFILER_OUTPUT`` or an msprof ``PROF_*`` folder and writes an HTML page and an xlsx
workbook. Its findings come back as :class:`~studio.tools.advisor.model.Finding` objects with
``source = "msprof-analyze"``: category, description, suggestion, priority (from the colour of
its HTML section: red / yellow / green = high / medium / low), the detail sheets as rows, and the
two files as links.

The executable is found through ``STUDIO_MSPROF_ANALYZE``, then ``PATH``, then beside the running
Python. It never writes beside the user's data: its output goes to the folder given, or to the
user cache.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path

from studio.core.jobs import CancelToken, Progress
from studio.tools.advisor.model import HIGH, LOW, MEDIUM, MSPROF_ANALYZE, Finding

ENV = "STUDIO_MSPROF_ANALYZE"
INSTALL = 'pip install "studio-workbench[ascend]"  (or: pip install msprof-analyze==26.2.0)'
TIMEOUT_S = 600
_COLOURS = {"#b5495b": HIGH, "#fcaf17": MEDIUM, "#65c294": LOW}


@dataclass
class MsprofAnalyzeRun:
    """One run: whether it ran, why not, what it found and where its files are."""

    available: bool
    executable: str | None = None
    ran: bool = False
    message: str = ""
    findings: list[Finding] = field(default_factory=list)
    html: str | None = None
    xlsx: str | None = None
    seconds: float = 0.0
    output_dir: str | None = None

    # studio.core.serial: the report's ``msprof_analyze`` entry counts the findings (the report holds them)
    __json_skip__ = ("findings",)
    __json_round__ = {"seconds": 3}
    __json_extra__ = {"findings": "finding_count"}

    @property
    def finding_count(self) -> int:
        return len(self.findings)


def find_executable() -> str | None:
    """The msprof-analyze executable, or None when it is not installed."""
    configured = os.environ.get(ENV)
    if configured:
        return configured if Path(configured).is_file() else None
    found = shutil.which("msprof-analyze")
    if found:
        return found
    beside = Path(sys.executable).with_name("msprof-analyze")
    return str(beside) if beside.is_file() else None


def applies_to(trace_facts: dict, path: Path) -> bool:
    """True for Ascend profiling data (what msprof-analyze reads)."""
    from studio.core import formats

    try:
        detected = formats.detect(path).format.id
    except Exception:  # noqa: BLE001 - sniffing failed: not a folder it reads
        return False
    return detected in ("pytorch_npu_dir", "msprof_dir") or path.name == "ASCEND_PROFILER_OUTPUT"


def _input_dir(path: Path, staging: Path) -> Path:
    """The folder to pass as ``-d``: the parent of ``ASCEND_PROFILER_OUTPUT``, a ``PROF_*`` folder as
    it is, or a staging folder where a bare PyTorch-NPU output is linked as ``ASCEND_PROFILER_OUTPUT``."""
    path = path.resolve()
    if path.name == "ASCEND_PROFILER_OUTPUT":
        return path.parent
    if (path / "ASCEND_PROFILER_OUTPUT").is_dir() or path.name.startswith("PROF_") or any(path.glob("PROF_*")):
        return path
    link = staging / "ASCEND_PROFILER_OUTPUT"
    # msprof-analyze refuses symbolic links (as msprof does): copy the few summary files instead
    shutil.copytree(path, link, ignore=shutil.ignore_patterns("*.db-wal", "*.db-shm"))
    return staging


def default_output_dir(profile: Path) -> Path:
    """``<cache>/advisor/msprof-analyze/<name>-<hash of the path>``."""
    from studio.core.paths import cache_dir

    digest = hashlib.sha1(str(Path(profile).resolve()).encode()).hexdigest()[:10]
    return cache_dir() / "advisor" / "msprof-analyze" / f"{Path(profile).name}-{digest}"


def run_msprof_analyze(profile: Path, out: Path | None = None, cancel: CancelToken | None = None,
                       executable: str | None = None) -> Generator[Progress, None, MsprofAnalyzeRun]:
    """Job: run ``msprof-analyze advisor all`` on ``profile`` and read its findings."""
    exe = executable or find_executable()
    if exe is None:
        return MsprofAnalyzeRun(False, message=f"msprof-analyze is not installed; our own rules ran. Install it "
                                               f"with: {INSTALL} (or set {ENV} to its path).")
    out = Path(out) if out is not None else default_output_dir(profile)
    out.mkdir(parents=True, exist_ok=True)
    before = set(out.rglob("mstt_advisor_*"))
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="studio-msprof-analyze-") as staging:
        data = _input_dir(Path(profile), Path(staging))
        argv = [exe, "advisor", "all", "-d", str(data), "-o", str(out), "-l", "en"]
        yield Progress(None, "running msprof-analyze advisor")
        log = out / "msprof-analyze.log"
        with log.open("w", encoding="utf-8") as handle:
            proc = subprocess.Popen(argv, stdout=handle, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            try:
                while proc.poll() is None:
                    if cancel is not None and cancel.cancelled:
                        break
                    if time.perf_counter() - started > TIMEOUT_S:
                        break
                    time.sleep(0.05)
            finally:
                if proc.poll() is None:  # cancelled, timed out or closed: end it, never leave it running
                    proc.kill()
                    proc.wait()
        if cancel is not None:
            cancel.raise_if_cancelled()
    run = MsprofAnalyzeRun(True, exe, seconds=time.perf_counter() - started, output_dir=str(out))
    new = sorted(set(out.rglob("mstt_advisor_*")) - before, key=lambda p: p.stat().st_mtime)
    run.html = next((str(p) for p in reversed(new) if p.suffix == ".html"), None)
    run.xlsx = next((str(p) for p in reversed(new) if p.suffix == ".xlsx"), None)
    if proc.returncode != 0 or run.xlsx is None:
        tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-3:]
        run.message = (f"msprof-analyze exited with {proc.returncode} and wrote no workbook; log: {log}"
                       + (f" (last lines: {' | '.join(tail)})" if tail else ""))
        return run
    run.ran = True
    run.findings = parse_outputs(Path(run.xlsx), Path(run.html) if run.html else None)
    run.message = f"msprof-analyze found {len(run.findings)} problem(s) in {run.seconds:.1f} s"
    yield Progress(1.0, run.message)
    return run


def priorities(html: Path | None) -> dict[str, str]:
    """Section title -> priority, from the colours msprof-analyze gives its HTML section headers."""
    if html is None or not html.is_file():
        return {}
    text = html.read_text(encoding="utf-8", errors="replace")
    out = {}
    for colour, title in re.findall(r'<h2[^>]*background-color:\s*(#[0-9a-fA-F]{6})[^>]*>\s*([^<]+?)\s*</h2>', text):
        out[title] = _COLOURS.get(colour.lower(), LOW)
    return out


def parse_outputs(xlsx: Path, html: Path | None) -> list[Finding]:
    """Findings from the ``problems`` sheet, with each problem's own sheet as detail rows."""
    from studio.tools.advisor.xlsx import read_workbook

    sheets = read_workbook(xlsx)
    problems = sheets.get("problems") or []
    if not problems:
        return []
    header = [h.strip().lower() for h in problems[0]]
    prio = priorities(html)
    findings = []
    for row in problems[1:]:
        cell = dict(zip(header, row))
        category = cell.get("category", "").strip()
        if not category:
            continue
        detail_sheet = next((name for name in sheets if name != "problems"
                             and (name == category or name.lower().startswith(category.lower()[:20]))), None)
        details = None
        if detail_sheet is not None and sheets[detail_sheet]:
            table = sheets[detail_sheet]
            details = {detail_sheet: {"columns": table[0], "rows": table[1:]}}
        evidence = [f"{cell.get('description', '').strip()} (msprof-analyze advisor, {xlsx.name})"]
        for key in ("problem count", "total_time(us)", "time ratio", "income(us)", "income ratio"):
            if cell.get(key):
                evidence.append(f"{key}: {cell[key]}")
        income = _float(cell.get("income(us)"))
        slug = re.sub(r"[^a-z0-9]+", "-", category.lower()).strip("-")
        # its AI Core checker writes one problem per operator kind under one HTML section
        section = "AI Core Performance Analysis" if category.endswith("Operator Perf Analysis") else category
        findings.append(Finding(
            f"msprof-analyze/{slug}", category, prio.get(category, prio.get(section, LOW)), "msprof-analyze", evidence,
            cell.get("suggestion", "").strip(), income / 1000.0 if income else None,
            (_float(cell.get("total_time(us)")) or 0) / 1000.0 or None, source=MSPROF_ANALYZE, details=details,
            links=[str(p) for p in (html, xlsx) if p is not None]))
    return findings


def _float(text) -> float | None:
    try:
        return float(text)
    except (TypeError, ValueError):
        return None
