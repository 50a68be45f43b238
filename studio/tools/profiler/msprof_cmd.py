"""msprof on an Ascend host: the command, the PROF_ folder it reports, the export step, its errors.

Everything here is pure (strings and listings in, strings out), so it is the same whether msprof
runs on this computer or over SSH; the Target runs the argv lists (quoting each word).

* :func:`msprof_argv` wraps an application command line in ``msprof --application=... --output=...``
  with every switch written out (``=on`` / ``=off``), so a run never depends on msprof's defaults,
  which changed between CANN versions. ``--output`` must be a real path: msprof refuses a path with
  a symlink in it, so callers pass ``target.realpath(folder)``.
* :func:`find_prof_folder` finds the ``PROF_...`` folder from msprof's "Data is saved in ..." line,
  else from any PROF_ path it printed, else the newest PROF_ folder in a listing of the output.
* :func:`needs_export` / :func:`export_argv`: ``msprof --export=on --output=PROF_...`` when the
  text summaries are not there yet.
* :func:`explain_failure`: one clear message for a missing msprof, no NPU, a full disk or a
  permission error, naming the host, the command, the log folder and the fix.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, fields

from studio.core.errors import UserError

AIC_METRICS = ("PipeUtilization", "ArithmeticUtilization", "Memory", "MemoryL0", "MemoryUB",
               "ResourceConflictRatio", "L2Cache", "PipelineExecuteUtilization")
TASK_TIME = ("on", "off", "l0", "l1")
PROF_NAME = re.compile(r"PROF_\d{6}_\d{17}_[A-Za-z0-9]+")
PLOG_DIR = "~/ascend/log/debug/plog/"


@dataclass
class MsprofOptions:
    """The switches users set in MindStudio's Profiling options page.

    Defaults follow the face-mask tutorial: AscendCL, runtime API, AI CPU and msproftx on; task
    time on so the timeline has device tasks; AI Core PMU metrics off (they slow the run down).
    """

    ascendcl: bool = True
    runtime_api: bool = True
    task_time: str = "on"
    ai_core: bool = False
    aic_metrics: str = "PipeUtilization"
    aicpu: bool = True
    model_execution: bool = False
    sys_hardware_mem: bool = False
    msproftx: bool = True

    def validate(self) -> None:
        """UserError for a value msprof would reject."""
        if self.task_time not in TASK_TIME:
            raise UserError(f"--task-time={self.task_time} is not a msprof value", "--task-time",
                            f"Use one of: {', '.join(TASK_TIME)}.")
        if self.ai_core and self.aic_metrics not in AIC_METRICS:
            raise UserError(f"--aic-metrics={self.aic_metrics} is not a msprof metric group", "--aic-metrics",
                            f"Use one of: {', '.join(AIC_METRICS)}.")

    def switches(self) -> list[str]:
        """``--ascendcl=on`` ... in msprof's spelling."""
        self.validate()
        on = {True: "on", False: "off"}
        out = [f"--ascendcl={on[self.ascendcl]}", f"--runtime-api={on[self.runtime_api]}",
               f"--task-time={self.task_time}", f"--ai-core={on[self.ai_core]}"]
        if self.ai_core:
            out.append(f"--aic-metrics={self.aic_metrics}")
        out += [f"--aicpu={on[self.aicpu]}", f"--model-execution={on[self.model_execution]}",
                f"--sys-hardware-mem={on[self.sys_hardware_mem]}", f"--msproftx={on[self.msproftx]}"]
        return out

    @classmethod
    def from_strings(cls, items: list[str]) -> MsprofOptions:
        """Options from ``--msprof-option`` values such as ``ai-core=on`` or ``aic-metrics=Memory``."""
        options = cls()
        names = {f.name: f for f in fields(cls)}
        for item in items:
            key, sep, value = item.lstrip("-").partition("=")
            name = key.replace("-", "_")
            if not sep or name not in names:
                raise UserError(f"Unknown msprof option {item!r}", "--msprof-option",
                                "Use NAME=VALUE with NAME one of: "
                                + ", ".join(n.replace("_", "-") for n in names) + ".")
            if names[name].type in ("bool", bool):
                if value not in ("on", "off"):
                    raise UserError(f"msprof option {key} takes on or off, not {value!r}", "--msprof-option",
                                    f"Write {key}=on or {key}=off.")
                setattr(options, name, value == "on")
            else:
                setattr(options, name, value)
        options.validate()
        return options


def msprof_argv(application: str, output: str, options: MsprofOptions | None = None,
                program: str = "msprof") -> list[str]:
    """``msprof --application=APP --output=OUT <switches>`` as argv (each word quoted when run)."""
    if not application.strip():
        raise UserError("No application to profile", "--application", "Give the command that runs the app.")
    if not output.startswith("/"):
        raise UserError("msprof needs an absolute output folder", output,
                        "Resolve it on the host first (realpath); msprof refuses relative and symlinked paths.")
    return [program, f"--application={application}", f"--output={output}",
            *(options or MsprofOptions()).switches()]


def command_line(argv: list[str]) -> str:
    """The argv as one shell line, every argument quoted with shlex.quote."""
    return " ".join(shlex.quote(a) for a in argv)


def export_argv(prof_folder: str, program: str = "msprof") -> list[str]:
    """``msprof --export=on --output=PROF_...``: writes mindstudio_profiler_output/ (or summary/)."""
    return [program, "--export=on", f"--output={prof_folder}"]


# The rest of the line: msprof prints the path as it is, spaces included.
_SAVED = re.compile(r"Data is saved in\s+(.+?)\s*$", re.I)


def find_prof_folder(lines: list[str], output: str = "", listing: list[str] | None = None) -> str | None:
    """The PROF_ folder of this run: "Data is saved in X", else a PROF_ path msprof printed, else the
    newest PROF_ entry of ``listing`` (names in ``output``; the 17-digit timestamp orders them)."""
    for line in reversed(lines):
        match = _SAVED.search(line)
        if match:
            path = match.group(1).strip("'\"").rstrip(".")
            found = PROF_NAME.search(path)
            if found:  # msprof may report a sub-folder (device_0); keep the PROF_ level
                return path[:found.end()]
            return path
    for line in reversed(lines):
        for match in reversed(list(PROF_NAME.finditer(line))):
            path = line[line.rfind(" ", 0, match.start()) + 1:match.end()].lstrip("'\"[(")
            if path.startswith("/"):
                return path
    names = [n.rstrip("/") for n in listing or [] if PROF_NAME.fullmatch(n.rstrip("/").rsplit("/", 1)[-1])]
    if names:
        newest = max(names, key=lambda n: n.rsplit("/", 1)[-1].split("_")[2])
        return newest if newest.startswith("/") or not output else f"{output.rstrip('/')}/{newest}"
    return None


def needs_export(listing: list[str]) -> bool:
    """True when a PROF_ folder's listing (paths relative to it) has no text summaries yet."""
    for path in listing:
        parts = path.strip("/").split("/")
        if parts[0] == "mindstudio_profiler_output" and len(parts) > 1 and parts[-1].endswith((".csv", ".json")):
            return False
        if len(parts) > 2 and parts[0].startswith("device_") and parts[1] in ("summary", "timeline"):
            return False
    return True


@dataclass
class Diagnosis:
    """What went wrong with an msprof run and how to fix it."""

    kind: str  # "missing-msprof", "no-npu", "disk-full", "permission", "symlink", "failed"
    what: str
    fix: str


_NO_NPU = Diagnosis("no-npu", "no NPU is usable on the host (npu-smi info fails)",
                    "Check the driver with `npu-smi info` on the host; install or reload the Ascend driver "
                    "(the board may need a reboot), and make sure the user is in the HwHiAiUser group.")


def diagnose(lines: list[str], status: int, program: str = "msprof") -> Diagnosis:
    """Classify a failed run from its exit status and output."""
    text = "\n".join(lines)
    low = text.lower()
    if program == "npu-smi" and status != 0:
        return _NO_NPU
    if status == 127 or f"{program}: command not found" in text or f"{program}: not found" in text:
        return Diagnosis("missing-msprof", f"{program} was not found",
                         "Set the host's CANN toolkit path (its set_env.sh puts msprof on PATH): msprof sits in "
                         "<toolkit>/tools/profiler/bin/ (CANN >= 6), <toolkit>/toolkit/tools/profiler/bin/ (5.x), "
                         "or under /var on boards in RC mode (find /var -name msprof).")
    if "npu-smi" in low and ("not found" in low or "dcmi" in low) or "device not found" in low \
            or "drvmngget" in low or "dsmi" in low or "no npu" in low:
        return _NO_NPU
    if "no space left on device" in low or "disk is full" in low or "disk space" in low:
        return Diagnosis("disk-full", "the host's disk is full",
                         "Free space in the output folder's file system (df -h there), or choose another output "
                         "folder; msprof needs room for the raw data and the export.")
    if "soft link" in low or "symbolic link" in low or "symlink" in low:
        return Diagnosis("symlink", "msprof refused a path that goes through a symbolic link",
                         "Use the real path (realpath on the host); Studio resolves it before running msprof.")
    if "permission denied" in low or "permission" in low and "not" in low:
        return Diagnosis("permission", "permission denied",
                         "Give the run's user write access to the output folder (and read/execute on the app), "
                         "or choose a folder it owns.")
    return Diagnosis("failed", f"{program} failed with exit code {status}",
                     "Read the output above and the log folder named here.")


def explain_failure(host: str, command: str, lines: list[str], status: int, log_dir: str = PLOG_DIR,
                    program: str = "msprof") -> UserError:
    """One UserError naming the host, the command, the log folder and the fix."""
    d = diagnose(lines, status, program)
    tail = [line for line in lines if line.strip()][-5:]
    what = f"{d.what} on {host}" + ("\n  output: " + "\n          ".join(tail) if tail else "")
    return UserError(what, f"{host}: {command}\n  log:   {log_dir} (plog-<pid>_*.log; ASCEND_PROCESS_LOG_PATH "
                     f"moves it)", d.fix)
