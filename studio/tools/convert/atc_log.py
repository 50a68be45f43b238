"""Read ATC's output and plog files: error codes turned into what went wrong and what to do.

ATC prints ``ATC run failed, Please check the detail log, Try 'atc --help' for more information``
followed by lines such as ``E10001: Value [-1] for parameter [--input_shape] is invalid...``;
plog lines look like ``[ERROR] GE(1234,atc.bin):2024-01-01-10:00:00.123.456 [file.cc:12]text``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_CODE = re.compile(r"\b([EW]\d{5})\b[:\s]*(.*)")
_PLOG = re.compile(r"^\[(?P<level>ERROR|WARNING|INFO|DEBUG|EVENT)\]\s+(?P<module>\w+)\((?P<pid>\d+),(?P<proc>[^)]*)\):"
                   r"(?P<time>\S+)\s+\[(?P<src>[^\]]+)\](?P<text>.*)$")

# code -> (meaning, fix). Fixes say what to change in the wizard / on the command line.
CODES: dict[str, tuple[str, str]] = {
    "E10001": ("An option has an invalid value.", "Read the option and value named in the message; check it against 'atc --help'."),
    "E10002": ("--input_shape is malformed.", 'Write it as "name1:n,c,h,w;name2:..." with the model\'s input names.'),
    "E10003": ("An option value is invalid.", "Fix the option named in the message."),
    "E10004": ("An option was given without a value.", "Give the value, or remove the option."),
    "E10005": ("An option takes true or false.", "Use true or false."),
    "E10006": ("An option takes 1 or 0.", "Use 1 or 0."),
    "E10007": ("A required option is missing.", "Add the option named in the message (often --soc_version or --framework)."),
    "E10008": ("Caffe conversion needs the weights.", "Add --weight=model.caffemodel."),
    "E10009": ("Dynamic shape options are mutually exclusive.", "Keep one of --dynamic_batch_size, --dynamic_image_size, --dynamic_dims."),
    "E10010": ("--log has an invalid level.", "Use debug, info, warning, error or null."),
    "E10011": ("--input_shape has a dim that is not a positive integer.", "Use positive sizes (or -1 with a dynamic option)."),
    "E10016": ("A node named in an option is not in the model.", "Check the node names (open the model in the Graph panel)."),
    "E10017": ("An input named in an option is not a Data node.", "Name the model's inputs, not inner nodes."),
    "E10018": ("-1 in --input_shape does not match the dynamic option.", "Put -1 at the batch dim for --dynamic_batch_size, at H and W for --dynamic_image_size."),
    "E10019": ("--dynamic_image_size needs -1 at H and W.", 'e.g. --input_shape="data:1,3,-1,-1".'),
    "E10020": ("--dynamic_image_size is malformed.", 'Write "h1,w1;h2,w2".'),
    "E10021": ("A path is too long.", "Use a shorter path."),
    "E10022": ("A path has no file name.", "Give the full path including the file name."),
    "E10031": ("--dynamic_batch_size needs -1 as the batch dim.", 'e.g. --input_shape="data:-1,3,224,224".'),
    "E10032": ("A JSON file could not be parsed.", "Fix the JSON file named in the message."),
    "E10034": ("A node connected to AIPP is FP16.", "Keep the AIPP input node FP32 (remove it from --input_fp16_nodes)."),
    "E10035": ("Too few or too many dynamic profiles.", "Give 2 to 100 profiles."),
    "E10036": ("Dynamic profiles have inconsistent dims.", "Give the same number of dims in every profile."),
    "E10037": ("A dynamic profile size is not positive.", "Use sizes > 0."),
    "E10038": ("A dynamic profile size is out of range.", "Use sizes within the limits in the message."),
    "E10039": ("Dynamic profiles repeat.", "Remove the duplicate profile."),
    "E10040": ("-1 dims and dynamic profiles disagree.", "Give as many values per profile as there are -1 dims."),
    "E10041": ("The model could not be loaded.", "Check --framework matches the file, the file is complete, and weights are under 2 GB."),
    "E10047": ("Two options cannot be used together.", "Remove one of the options named in the message."),
    "E10049": ("--input_shape has the wrong number of dims for an input.", "Give as many dims as the input has."),
    "E10050": ("A dim is outside the --input_shape range.", "Use a size inside the range."),
    "E10052": ("The AIPP configuration is invalid.", "Open the AIPP file in the Converter (it names the line) and fix it."),
    "E10054": ("A required value is empty.", "Quote values that contain ';' or spaces."),
    "E10055": ("The operation is not supported.", "See the reason in the message."),
    "E10056": ("Two options cannot both be set.", "Remove one of them."),
    "E10057": ("Two options must be used together.", "Add the missing option."),
    "E10410": ("A file does not exist.", "Check the path (on the host where atc runs)."),
    "E10501": ("An op has no registered IR.", "The op is not supported by this CANN version: replace it, or upgrade CANN."),
    "E11009": ("No Caffe parser for an op.", "Replace the layer or add a custom op plugin."),
    "E11017": ("An --out_nodes node is not in the Caffe model.", "Use the layer's top name."),
    "E11022": ("The prototxt is invalid.", "Fix the prototxt syntax."),
    "E11024": ("The caffemodel is invalid.", "Check --weight is the model's .caffemodel."),
    "E13001": ("A file could not be opened.", "Check the path and permissions."),
    "E13005": ("A file could not be parsed.", "Check the file is complete and of the expected kind."),
    "E13010": ("No op plugin.", "Install the op plugin, or replace the op."),
    "E13023": ("The model is too large.", "Split the model or use --external_weight=1."),
    "E13024": ("An environment variable is invalid.", "Check ASCEND_* variables (source set_env.sh)."),
    "E14001": ("An op argument is invalid.", "Check the op named in the message."),
    "E16001": ("An ONNX node is missing.", "Check the model's graph."),
    "E16002": ("No ONNX parser for an op type.", "Replace the op, or export with another opset (11..18)."),
    "E16003": ("The ONNX model has no graph.", "Export the model again."),
    "E16004": ("Multiple --domain_version given.", "Give one."),
    "E19999": ("Unknown error.", "Read the plog (see the log path) for the lines before this one."),
    "W11001": ("An op does not hit the high-priority op library.", "Usually harmless; performance may be lower."),
}
FAMILIES = (("E11", "Caffe parsing error"), ("E12", "TensorFlow parsing error"), ("E13", "file or environment error"),
            ("E16", "ONNX parsing error"), ("E2", "operator (FE) error"), ("E6", "TBE fusion error"))


@dataclass
class AtcMessage:
    """One finding in ATC's output: its code (or None), level, the line, and our explanation."""

    line_number: int
    level: str
    code: str | None
    text: str
    meaning: str
    fix: str

    def __str__(self) -> str:
        head = f"line {self.line_number}: {self.code + ' ' if self.code else ''}{self.text}"
        return head + (f"\n  means: {self.meaning}\n  fix:   {self.fix}" if self.meaning else "")


def explain(code: str) -> tuple[str, str]:
    """(meaning, fix) for an error code; family-level text for codes we have no entry for."""
    if code in CODES:
        return CODES[code]
    for prefix, family in FAMILIES:
        if code.startswith(prefix):
            return (f"An ATC {family}.", "Read the message and the plog around it.")
    return ("", "")


def parse_atc_output(text: str) -> list[AtcMessage]:
    """Every coded error/warning and every plog ERROR line, in order."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.rstrip()
        plog = _PLOG.match(line)
        code_match = _CODE.search(line)
        if code_match:
            code = code_match[1]
            meaning, fix = explain(code)
            level = "warning" if code.startswith("W") else "error"
            found.append(AtcMessage(number, level, code, code_match[2].strip() or line.strip(), meaning, fix))
        elif plog and plog["level"] in ("ERROR", "WARNING"):
            found.append(AtcMessage(number, plog["level"].lower(), None, f"{plog['module']} [{plog['src']}]{plog['text']}", "", ""))
        elif "ATC run failed" in line:
            found.append(AtcMessage(number, "error", None, line.strip(), "ATC stopped; the lines below say why.",
                                    "Fix the first coded error below; plogs are in $HOME/ascend/log/debug/plog/."))
    return found


def succeeded(text: str) -> bool:
    """True when ATC reported success (``ATC run success``)."""
    return "ATC run success" in text
