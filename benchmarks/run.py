"""Run every benchmark script in this folder and print one table: figure, ours, peer, ratio.

Each ``bench_*.py`` prints JSON lines of the form
``{"figure": ..., "unit": "s", "ours": 0.8, "peer": 0.5, "peer_name": "...", "goal": "..."}``;
ours and peer are measured in the same run, on the same machine.

    python benchmarks/run.py                          # every script (make bench)
    python benchmarks/run.py bench_ssh.py --quick     # one script, with its own options

The scripts import Studio and the tests' helpers (the loopback sshd, the stand-in tools, the model
builders) by name: this runner puts the checkout, tests/ and tests/tools/ on their PYTHONPATH.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def script_env() -> dict[str, str]:
    """This environment with the checkout, tests/ and tests/tools/ first on PYTHONPATH."""
    paths = [str(REPO), str(REPO / "tests"), str(REPO / "tests" / "tools")]
    if os.environ.get("PYTHONPATH"):
        paths.append(os.environ["PYTHONPATH"])
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def main(argv: list[str]) -> int:
    """Run every ``bench_*.py``, or the one named first in ``argv`` with the rest as its options."""
    if argv:
        script = HERE / Path(argv[0]).name
        if not script.is_file() or not script.name.startswith("bench_"):
            print(f"{argv[0]}: no such benchmark in {HERE} (the scripts are bench_*.py)", file=sys.stderr)
            return 2
        scripts, options = [script], argv[1:]
    else:
        scripts, options = sorted(HERE.glob("bench_*.py")), []
    rows, failed, notes = [], [], []
    env = script_env()
    for script in scripts:
        print(f"running {script.name} ...", file=sys.stderr, flush=True)
        result = subprocess.run([sys.executable, str(script), *options], capture_output=True, text=True, env=env)
        if result.returncode != 0:
            failed.append(script.name)
            print(result.stderr, file=sys.stderr)
            continue
        # What a script left out (no sshd, no rsync, ...) or did not finish on a loaded machine.
        notes += [line.lstrip("# ") for line in result.stderr.splitlines()
                  if any(word in line for word in ("skipping", "skipped", "not installed", "not finished"))]
        rows += [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    header = f"{'figure':<44} {'ours':>10} {'peer':>10} {'ratio':>7}  peer / goal"
    print(header)
    print("-" * len(header))
    for row in rows:
        print(_row(row))
    for note in notes:
        print(f"note: {note}")
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


def _row(row: dict) -> str:
    """One table line; a row whose figures are text (a range, "-") is printed as it is."""
    unit = row.get("unit", "")
    ours, peer = row["ours"], row["peer"]
    if not all(isinstance(v, (int, float)) for v in (ours, peer)):
        return f"{row['figure']:<44} {ours!s:>10} {peer!s:>10} {'':>7}  {row['peer_name']}; goal: {row.get('goal', '-')}"
    ratio = ours / peer if peer else float("nan")
    return (f"{row['figure']:<44} {ours:>8.3f}{unit:>2} {peer:>8.3f}{unit:>2} {ratio:>6.2f}x"
            f"  {row['peer_name']}; goal: {row.get('goal', '-')}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
