""""Test connection": a checklist of what works on a host and what it can run.

The checklist runs against a :class:`~studio.targets.ssh.SshTarget`. Reachability, host key,
authentication and latency are checked from here on a fresh login (a pooled connection would hide
a changed key or a broken password); everything about the host itself (OS, architecture, free disk, CANN toolkit, npu-smi, Python, onnxruntime) comes from
ONE remote POSIX ``sh`` script, so a slow link costs one round trip rather than twenty. Each item
is ``ok``, ``missing`` (not installed: the fix says how to get it), ``failed`` (something is
wrong) or ``skipped`` (an earlier step failed).
"""

from __future__ import annotations

import shlex
import socket
import statistics
import time
from collections.abc import Generator
from dataclasses import dataclass, field

from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Progress
from studio.remote.connection import NotConnected
from studio.remote.known_hosts import HostKeyChanged, UnknownHostKey
from studio.targets.base import DEFAULT_TOOLKIT
from studio.targets.ssh import SshTarget
from studio.core.units import human_size

OK, MISSING, FAILED, SKIPPED = "ok", "missing", "failed", "skipped"
ITEMS = [("reach", "Reachable"), ("hostkey", "Host key"), ("auth", "Authentication"), ("latency", "Latency"),
         ("os", "Operating system"), ("disk", "Free disk"), ("toolkit", "CANN toolkit"),
         ("set_env", "set_env.sh"), ("atc", "atc"), ("msprof", "msprof"), ("npu", "NPU devices (npu-smi)"),
         ("python", "Python"), ("onnxruntime", "onnxruntime")]
LABELS = dict(ITEMS)

# $1 = toolkit folder, $2 = folder whose free space matters. Prints "key<TAB>value" lines.
REMOTE_SCRIPT = r"""
tk=$1; dir=${2:-$HOME}
say() { printf '%s\t%s\n' "$1" "$(printf '%s' "$2" | tr '\t\n' '  ')"; }
os=$(. /etc/os-release 2>/dev/null && printf '%s' "$PRETTY_NAME")
say os "$(uname -s) $(uname -r)|${os:-unknown}"
say arch "$(uname -m)"
say disk "$(df -Pk "$dir" 2>&1 | tail -n 1)"
say dir_real "$(cd "$dir" 2>/dev/null && pwd -P)"
if [ -d "$tk" ]; then
  say toolkit "$(cd "$tk" && pwd -P)"
  v=""
  for f in "$tk"/*/ascend_toolkit_install.info "$tk"/ascend_toolkit_install.info "$tk"/compiler/version.info "$tk"/version.cfg; do
    [ -f "$f" ] && v=$(grep -i -m1 -E '^(version|Version)=' "$f" | cut -d= -f2) && [ -n "$v" ] && break
  done
  say version "$v"
  [ -f "$tk/set_env.sh" ] && say set_env "$tk/set_env.sh"
fi
(
  [ -f "$tk/set_env.sh" ] && . "$tk/set_env.sh" >/dev/null 2>&1
  say atc "$(command -v atc 2>/dev/null)"
  say msprof "$(command -v msprof 2>/dev/null)"
)
smi=$(command -v npu-smi 2>/dev/null || { [ -x /usr/local/sbin/npu-smi ] && echo /usr/local/sbin/npu-smi; })
if [ -n "$smi" ]; then
  say npu_smi "$smi"
  # limited in time: a hung driver must neither hang the check nor stay running on the host
  to=; command -v timeout >/dev/null 2>&1 && to="timeout -k 1 10"
  say npu_list "$($to "$smi" info -l 2>&1 | grep -E 'Total Count|NPU ID|Product Name|Chip Name' | tr '\n' ';')"
fi
py=$(command -v python3 2>/dev/null || command -v python 2>/dev/null)
if [ -n "$py" ]; then
  say python "$py|$("$py" -c 'import sys; print(sys.version.split()[0])' 2>&1)"
  say ort "$("$py" -c 'import onnxruntime as o; print(o.__version__ + "|" + ",".join(o.get_available_providers()))' 2>/dev/null)"
fi
say done 1
"""


@dataclass
class CheckItem:
    """One line of the checklist."""

    key: str
    label: str
    status: str = SKIPPED
    detail: str = ""
    fix: str = ""


@dataclass
class ProbeResult:
    """The checklist for one host; truthy when nothing failed (missing tools are allowed)."""

    host: str
    address: str
    items: list[CheckItem] = field(default_factory=list)
    facts: dict = field(default_factory=dict)
    unknown_key: UnknownHostKey | None = None   # set when the host key awaits the user's trust
    changed_key: HostKeyChanged | None = None   # set when the host key differs from known_hosts

    def item(self, key: str) -> CheckItem:
        return next(i for i in self.items if i.key == key)

    def set(self, key: str, status: str, detail: str = "", fix: str = "") -> None:
        item = self.item(key)
        item.status, item.detail, item.fix = status, detail, fix

    def __bool__(self) -> bool:
        return all(i.status != FAILED for i in self.items) and self.item("auth").status == OK

    def __json__(self) -> dict:
        """``studio ssh test --json`` (:func:`studio.core.serial.to_json`): the host key as its fingerprint or place."""
        return {"host": self.host, "address": self.address, "ok": bool(self),
                "unknown_key": self.unknown_key.fingerprint if self.unknown_key else None,
                "changed_key": f"{self.changed_key.file}:{self.changed_key.line}" if self.changed_key else None,
                "items": self.items, "facts": self.facts}


def probe(target: SshTarget, folder: str | None = None, cancel: CancelToken | None = None, timeout: float = 10.0,
          latency_runs: int = 3) -> Generator[Progress, None, ProbeResult]:
    """Run the checklist against ``target``'s host; ``folder`` is where free disk matters (default: home)."""
    entry = target.entry
    result = ProbeResult(entry.name, entry.address, [CheckItem(k, label) for k, label in ITEMS])
    total = 4.0
    yield Progress(0.0, f"Connecting to {entry.address}")
    if not entry.proxy_jump:  # through a jump host, reachability shows in the connect step
        try:
            start = time.perf_counter()
            socket.create_connection((entry.host, entry.port), timeout=timeout).close()
            result.set("reach", OK, f"{entry.host}:{entry.port} answered in {(time.perf_counter() - start) * 1000:.1f} ms")
        except OSError as exc:
            result.set("reach", FAILED, f"{entry.host}:{entry.port}: {getattr(exc, 'strerror', None) or exc}",
                       "Check the host name, the port and that sshd runs; a firewall may block the port.")
            return _not_checked(result, "no connection")
    if cancel:
        cancel.raise_if_cancelled()
    try:
        conn = target.context.connect(entry)
    except (UnknownHostKey, HostKeyChanged) as exc:
        if getattr(exc, "jump_host", None):  # a jump host's key: not this host's to trust here
            return _no_connection(result, exc)
        result.set("reach", OK) if result.item("reach").status == SKIPPED else None
        if isinstance(exc, UnknownHostKey):
            result.unknown_key = exc
            result.set("hostkey", FAILED, f"not known yet: {exc.key_type} {exc.fingerprint}", exc.fix)
        else:
            result.changed_key = exc
            result.set("hostkey", FAILED, exc.what, exc.fix)
        return _not_checked(result, "the host key is not trusted")
    except UserError as exc:
        if isinstance(exc, NotConnected) or getattr(exc, "jump_host", None):
            return _no_connection(result, exc)
        # The session came about and the key matched known_hosts (it is checked before any
        # credential is sent): what failed is the login.
        result.set("reach", OK) if result.item("reach").status == SKIPPED else None
        result.set("hostkey", OK, "matches known_hosts")
        result.set("auth", FAILED, exc.what, exc.fix or "")
        return _not_checked(result, "not logged in")
    try:
        if result.item("reach").status == SKIPPED:
            result.set("reach", OK, f"through {entry.proxy_jump}")
        key = conn.transport.get_remote_server_key()
        from studio.remote.known_hosts import fingerprint  # noqa: I001

        result.set("hostkey", OK, f"{key.get_name()} {fingerprint(key.get_name(), key.asbytes())}")
        result.set("auth", OK, f"{entry.auth} as {entry.user or conn.transport.get_username()}")
        yield Progress(1 / total, "Measuring latency")
        times = []
        for _ in range(latency_runs):
            if cancel:
                cancel.raise_if_cancelled()
            start = time.perf_counter()
            conn.run(["true"], timeout=timeout)
            times.append(time.perf_counter() - start)
        median = statistics.median(times) * 1000
        result.facts["latency_ms"] = round(median, 2)
        result.set("latency", OK, f"{median:.1f} ms median of {latency_runs} `true` round trips"
                   + (" (slow: the login shell's rc files may do heavy work)" if median > 300 else ""))
        yield Progress(2 / total, "Inspecting the host")
        toolkit = entry.toolkit or DEFAULT_TOOLKIT
        command = " ".join(["sh", "-c", shlex.quote(REMOTE_SCRIPT), "studio-probe", shlex.quote(toolkit),
                            shlex.quote(folder) if folder else "''"])
        on_host = SshTarget(entry, target.context, connection=conn)
        status, out, err = on_host.run_script(command, timeout=max(timeout, 30))
        facts = _parse(out.decode("utf-8", "replace"))
        if "done" not in facts:
            result.set("os", FAILED, f"the inspection script stopped (exit {status}): "
                       f"{err.decode('utf-8', 'replace').strip()[:300]}",
                       "The host needs a POSIX sh with uname, df and grep.")
            return _not_checked(result, "the inspection script stopped")
        _fill(result, facts, toolkit, folder)
        yield Progress(1.0, "Done")
        return result
    finally:
        conn.close()


def _no_connection(result: ProbeResult, exc: UserError) -> ProbeResult:
    """No SSH session: the reach item says why (the TCP port may have answered), nothing else ran."""
    reach = result.item("reach")
    detail = exc.what if reach.status != OK else f"{reach.detail}; {exc.what}"
    result.set("reach", FAILED, detail, exc.fix or "")
    return _not_checked(result, "no connection")


def _not_checked(result: ProbeResult, why: str) -> ProbeResult:
    """Say on every item that did not run why it did not (a blank line reads as "fine")."""
    for item in result.items:
        if item.status == SKIPPED and not item.detail:
            item.detail = f"not checked: {why}"
    return result


def _parse(text: str) -> dict[str, str]:
    facts = {}
    for line in text.splitlines():
        key, sep, value = line.partition("\t")
        if sep:
            facts[key] = value.strip()
    return facts


def _fill(result: ProbeResult, facts: dict[str, str], toolkit: str, folder: str | None) -> None:
    kernel, _, pretty = facts.get("os", "").partition("|")
    result.facts.update({"os": pretty, "kernel": kernel, "arch": facts.get("arch", "")})
    result.set("os", OK, f"{pretty} ({kernel}, {facts.get('arch', '?')})")
    where = folder or "the home folder"
    fields = facts.get("disk", "").split()
    if len(fields) >= 6 and fields[3].isdigit():
        free = int(fields[3]) * 1024
        result.facts["free_bytes"] = free
        result.set("disk", OK if free > 1 << 30 else FAILED, f"{human_size(free)} free at {where}"
                   f" ({facts.get('dir_real') or fields[5]})", "" if free > 1 << 30 else
                   "Less than 1 GiB free: models and profiling data need room; free some space.")
    else:
        result.set("disk", FAILED, f"cannot read free space at {where}: {facts.get('disk', '')}",
                   "Check that the deployment folder exists on the host.")
    fix_cann = ("Install the CANN toolkit (Ascend-cann-toolkit_*.run --install), or set the host's toolkit "
                "folder with `studio ssh add NAME ... --toolkit DIR`.")
    if "toolkit" in facts:
        version = facts.get("version") or "version unknown"
        result.facts.update({"toolkit": facts["toolkit"], "cann_version": facts.get("version", "")})
        result.set("toolkit", OK, f"{toolkit} -> {facts['toolkit']} ({version})")
        if "set_env" in facts:
            result.set("set_env", OK, facts["set_env"])
        else:
            result.set("set_env", FAILED, f"no set_env.sh in {toolkit}", "Reinstall the toolkit or pick its real folder.")
    else:
        result.set("toolkit", MISSING, f"no folder {toolkit}", fix_cann)
        result.set("set_env", MISSING, "no toolkit", fix_cann)
    for tool in ("atc", "msprof"):
        if facts.get(tool):
            result.set(tool, OK, facts[tool])
        else:
            result.set(tool, MISSING, f"{tool} not found (after sourcing set_env.sh)", fix_cann)
    if facts.get("npu_smi"):
        listing = facts.get("npu_list", "")
        count = next((p.split(":", 1)[1].strip() for p in listing.split(";") if "Total Count" in p), "?")
        result.facts["npu_count"] = count
        result.set("npu", OK if count not in ("0", "?") else FAILED, f"{count} device(s) via {facts['npu_smi']}",
                   "" if count not in ("0", "?") else "npu-smi sees no device: check the driver (npu-smi info).")
    else:
        result.set("npu", MISSING, "npu-smi not found",
                   "Install the Ascend driver (npu-smi comes with it); without it only ONNX Runtime runs here.")
    if facts.get("python"):
        path, _, version = facts["python"].partition("|")
        result.facts["python"] = version
        result.set("python", OK, f"Python {version} ({path})")
        if facts.get("ort"):
            version, _, providers = facts["ort"].partition("|")
            result.facts["onnxruntime"] = version
            result.set("onnxruntime", OK, f"{version} ({providers})")
        else:
            result.set("onnxruntime", MISSING, f"not importable by {path}", f"{path} -m pip install onnxruntime")
    else:
        result.set("python", MISSING, "no python3 on the PATH", "Install Python 3 (e.g. apt install python3).")
        result.set("onnxruntime", MISSING, "no Python", "Install Python 3, then pip install onnxruntime.")
