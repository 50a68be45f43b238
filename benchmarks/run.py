"""Run every benchmark script in this folder and print one table: figure, ours, peer, ratio.

Each ``bench_*.py`` prints JSON lines of the form
``{"figure": ..., "unit": "s", "ours": 0.8, "peer": 0.5, "peer_name": "...", "goal": "..."}``;
ours and peer are measured in the same run, on the same machine.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    rows, failed, notes = [], [], []
    for script in sorted(HERE.glob("bench_*.py")):
        print(f"running {script.name} ...", file=sys.stderr, flush=True)
        result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
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
    sys.exit(main())
