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
    rows, failed = [], []
    for script in sorted(HERE.glob("bench_*.py")):
        print(f"running {script.name} ...", file=sys.stderr, flush=True)
        result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
        if result.returncode != 0:
            failed.append(script.name)
            print(result.stderr, file=sys.stderr)
            continue
        rows += [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    header = f"{'figure':<44} {'ours':>10} {'peer':>10} {'ratio':>7}  peer / goal"
    print(header)
    print("-" * len(header))
    for row in rows:
        ratio = row["ours"] / row["peer"] if row["peer"] else float("nan")
        unit = row.get("unit", "")
        print(f"{row['figure']:<44} {row['ours']:>8.3f}{unit:>2} {row['peer']:>8.3f}{unit:>2} {ratio:>6.2f}x"
              f"  {row['peer_name']}; goal: {row.get('goal', '-')}")
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
