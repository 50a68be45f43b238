"""Framework models the converter hands to ATC as they are: TensorFlow frozen graphs and Caffe models.

Studio does not read them (ATC does); the formats are here so that opening one routes it to the
converter rather than failing as unknown.
"""

from __future__ import annotations

import re
from pathlib import Path

from studio.core.formats import CONVERT, FileFormat


def match_tf(path: Path, head: bytes) -> bool:
    """GraphDef starts with repeated NodeDef (field 1, length-delimited), whose first field is its name."""
    return path.suffix.lower() == ".pb" and head[:1] == b"\x0a"


def match_caffe(path: Path, head: bytes) -> bool:
    """A ``.caffemodel``, or a ``.prototxt`` with ``layer {`` blocks."""
    if path.suffix.lower() == ".caffemodel":
        return True
    return path.suffix.lower() == ".prototxt" and bool(re.search(rb"\blayers?\s*\{", head))


TF_PB = FileFormat("tf_pb", "TensorFlow frozen graph", CONVERT, match_tf, None)
CAFFE = FileFormat("caffe", "Caffe model", CONVERT, match_caffe, None)
