"""A stand-in CANN toolkit for the remote-ATC tests (the "remote" is the test sshd on localhost).

``make_toolkit(folder, om)`` writes ``set_env.sh`` (prepends ``bin/`` to PATH, as CANN's does
for its tools) and ``bin/atc``, a shell script that checks its arguments the way ATC does at
start-up, prints ATC-like progress, and copies ``om`` to ``<--output>.om``. It fails with a
real-looking E10001 when an --input_shape dim exceeds 8192 (our checks pass that; ATC's do not), and sleeps
(printing its PID to ``atc.pid``) when the file ``SLOW`` exists in the toolkit folder.
``make_quantize_toolkit(folder, om)`` adds the stand-in ``amct_onnx`` of tests/cann_standins.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

AMCT = Path(__file__).resolve().parents[1] / "cann_standins" / "bin" / "amct_onnx"

ATC_SCRIPT = r"""#!/bin/sh
# Stand-in for CANN's atc (tests only).
model= output= soc= shape= framework=
for arg in "$@"; do
  case "$arg" in
    --model=*) model="${arg#--model=}" ;;
    --output=*) output="${arg#--output=}" ;;
    --soc_version=*) soc="${arg#--soc_version=}" ;;
    --input_shape=*) shape="${arg#--input_shape=}" ;;
    --framework=*) framework="${arg#--framework=}" ;;
  esac
done
echo "$@" > "$STANDIN_TOOLKIT/last_args"
pwd -P > "$STANDIN_TOOLKIT/last_cwd"
fail() {
  echo "ATC run failed, Please check the detail log, Try 'atc --help' for more information"
  echo "$1"
  exit 1
}
[ -n "$soc" ] || fail "E10007: [--soc_version] is required. The value must be Ascend310."
[ -n "$framework" ] || fail "E10007: [--framework] is required."
[ -f "$model" ] || fail "E10410: Failed to open file [$model]: file does not exist."
for dim in $(echo "${shape#*:}" | tr ',' ' '); do
  [ "$dim" -le 8192 ] 2>/dev/null || fail "E10001: Value [${shape#*:}] for parameter [--input_shape] is invalid. Reason: dim [$dim] exceeds the maximum 8192 of the AI Core."
done
echo "ATC start working now, please wait for a moment."
if [ -f "$STANDIN_TOOLKIT/SLOW" ]; then
  echo $$ > "$STANDIN_TOOLKIT/atc.pid"
  i=0
  while [ $i -lt 300 ]; do echo "compiling op $i"; sleep 0.1; i=$((i+1)); done
fi
echo "[INFO] GE: parsing model $(basename "$model")"
cp "$STANDIN_OM" "$output.om" || fail "E13001: Failed to open file [$output.om] for writing."
echo "ATC run success, welcome to the next use."
"""


def make_toolkit(folder: Path, om: Path) -> Path:
    """Write the stand-in toolkit under ``folder`` and return it (the host entry's ``toolkit``)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "bin").mkdir(exist_ok=True)
    atc = folder / "bin" / "atc"
    atc.write_text(ATC_SCRIPT)
    os.chmod(atc, 0o755)
    (folder / "set_env.sh").write_text(
        f"export STANDIN_TOOLKIT='{folder}'\nexport STANDIN_OM='{om}'\nexport PATH=\"$STANDIN_TOOLKIT/bin:$PATH\"\n")
    return folder


def make_quantize_toolkit(folder: Path, om: Path) -> Path:
    """:func:`make_toolkit` with the stand-in ``amct_onnx`` (tests/cann_standins) beside its ``atc``:
    what ``studio quantize --ascend DIR --host`` runs."""
    make_toolkit(folder, om)
    shutil.copy2(AMCT, folder / "bin" / "amct_onnx")
    return folder
