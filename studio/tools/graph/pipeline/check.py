"""``check_pipeline``: what in a MindX SDK pipeline will fail or surprise at run time.

Each :class:`Finding` names the stream, the element, the property and the line. Checked:
links (``next``/``former``) and references (``dataSource`` ...) to elements that do not exist;
cycles; factories the SDK does not document (an app may build its own: a warning) and
properties those plugins do not document; ``deviceId`` that differs inside a stream; files
(``modelPath``, ``labelPath``, post-processing configs and libraries) missing under the
project folder; a model whose input size disagrees with the resize element that feeds it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from studio.core.errors import StudioError
from studio.tools.graph.pipeline import plugins
from studio.tools.graph.pipeline.document import Pipeline, Stream

ERROR, WARNING, INFO = "error", "warning", "info"
_RESIZE_FACTORIES = ("mxpi_imageresize", "mxpi_imagecrop", "mxpi_opencvcentercrop")


@dataclass
class Finding:
    """One problem: how bad, where (stream, element, prop, line) and what."""

    severity: str
    stream: str
    element: str
    prop: str
    line: int
    message: str

    def __str__(self) -> str:
        where = f"{self.stream}/{self.element}" + (f".{self.prop}" if self.prop else "")
        return f"{self.severity:<7} line {self.line:<4} {where}: {self.message}"


@dataclass
class HostFiles:
    """Which of the pipeline's file paths exist on the host the app runs on.

    ``project`` is the app's folder there (the local project mapped through a deployment);
    ``exists`` maps each path asked for (:func:`host_paths`) to whether it exists there.
    """

    where: str
    project: str
    exists: dict[str, bool]

    def __json__(self) -> dict:
        """``host`` in ``pipeline check --json``: which host, and the app's folder there."""
        return {"name": self.where, "project": self.project}

    def path_of(self, value: str) -> str:
        """Where the app on the host finds ``value`` (relative values resolve in its folder)."""
        return value if PurePosixPath(value).is_absolute() else str(PurePosixPath(self.project) / value)


@dataclass
class CheckResult:
    """The findings of one pipeline, and the folder its relative paths were resolved against."""

    path: Path
    project: Path
    project_reason: str
    findings: list[Finding]
    host: HostFiles | None = None

    __json_extra__ = {"errors": "error_count"}  # studio.core.serial: the JSON counts the errors
    __json_omit_empty__ = ("host",)  # only with --host

    @property
    def error_count(self) -> int:
        return len(self.errors)

    @property
    def errors(self) -> list[Finding]:
        """Findings of severity error."""
        return [f for f in self.findings if f.severity == ERROR]



def guess_project(pipeline: Pipeline) -> tuple[Path, str]:
    """The folder the app runs from, and why it was chosen (the output says it was a guess).

    In order: the nearest folder above the pipeline (up to 3 levels) holding ``main.py``,
    or ``run.sh``; else the one under which most of the pipeline's relative paths
    lead furthest into existing folders (``./data/model/x.om`` from ``data/x.pipeline`` runs from
    the folder above ``data``); else the pipeline's folder, or its parent for a ``pipeline/`` folder.
    """
    here = pipeline.path.resolve().parent
    for folder in (here, *list(here.parents)[:3]):
        for marker in ("main.py", "run.sh"):
            if (folder / marker).is_file():
                return folder, f"guessed: the nearest folder with {marker}; give --project to change it"
    # Apps keep their pipeline one folder down (pipeline/, data/, config/): look no further up, or a
    # folder that merely happens to hold a "model" folder far above would win.
    candidates = [here, here.parent]
    relative = [v for v in _file_values(pipeline) if not PurePosixPath(v).is_absolute()]
    scores = [(_reach(folder, relative), -i, folder) for i, folder in enumerate(candidates)]
    best = max(scores, key=lambda s: (s[0], s[1]))
    if best[0] > 0:
        return best[2], "guessed: where the pipeline's relative paths lead into existing folders; give --project " \
                        "to change it"
    if here.name == "pipeline":
        return here.parent, "guessed: the folder above pipeline/; give --project to change it"
    return here, "guessed: the pipeline's folder; give --project to change it"


def _file_values(pipeline: Pipeline) -> list[str]:
    return [value for stream in pipeline.streams for element in stream.elements.values()
            for prop in plugins.FILE_PROPS
            if isinstance(value := element.props.get(prop), str) and "/" in value]


def _reach(folder: Path, values: list[str]) -> int:
    """How many leading folders of each relative path exist under ``folder``, summed."""
    total = 0
    for value in values:
        current = folder
        for part in PurePosixPath(value).parent.parts:
            current = current / part
            if not current.is_dir():
                break
            if part not in (".", ".."):
                total += 1
    return total


def host_paths(pipeline: Pipeline, remote_project: str) -> list[str]:
    """The host paths whose existence :func:`check_pipeline` needs for ``host`` (one round trip)."""
    probe = HostFiles("", remote_project, {})
    return sorted({probe.path_of(value) for stream in pipeline.streams for element in stream.elements.values()
                   for prop, value in _file_props(element)})


def check_pipeline(pipeline: Pipeline, project: Path | None = None, host: HostFiles | None = None) -> CheckResult:
    """Check ``pipeline``; relative file paths resolve against ``project`` (guessed when None).

    With ``host``, the file properties are checked where the app runs: on that host, in its
    project folder there (absolute paths too); the model-size check still reads the local copy.
    """
    if project is None:
        project, reason = guess_project(pipeline)
    else:
        project, reason = Path(project), "given"
    findings: list[Finding] = []
    for stream in pipeline.streams:
        findings += _structure(stream)
        findings += _plugins(stream)
        findings += _devices(stream)
        findings += _files(stream, project) if host is None else _host_files(stream, host)
        findings += _model_sizes(stream, project)
    order = {ERROR: 0, WARNING: 1, INFO: 2}
    findings.sort(key=lambda f: (order[f.severity], f.line))
    return CheckResult(pipeline.path, project, reason, findings, host)


def _structure(stream: Stream) -> list[Finding]:
    out = [Finding(ERROR, stream.name, element, "", line, f"the element {what}")
           for element, what, line in stream.malformed]
    out += [Finding(ERROR, stream.name, element, key, line, f"\"{key}\" names {target!r}, which is not an element "
                    f"of stream {stream.name!r}") for element, key, target, line in stream.bad_links]
    own_plugins = sorted({e.name for e in stream.elements.values() if plugins.documented_props(e.factory) is None})
    for element, prop, target, line in stream.references():
        if target in stream.elements:
            continue
        if own_plugins:  # an app's own plugin may write metadata under a key of its choosing
            out.append(Finding(WARNING, stream.name, element, prop, line,
                               f"names {target!r}, which is not an element of stream {stream.name!r}; it must be "
                               f"a metadata key written by the app's own plugin ({', '.join(own_plugins)})"))
        else:
            out.append(Finding(ERROR, stream.name, element, prop, line,
                               f"names {target!r}, which is not an element of stream {stream.name!r}"))
    cycle = _cycle(stream)
    if cycle:
        first = stream.elements[cycle[0]]
        out.append(Finding(ERROR, stream.name, cycle[0], "next", first.line,
                           "the links form a cycle: " + " -> ".join(cycle + [cycle[0]])))
    return out


def _cycle(stream: Stream) -> list[str]:
    """One cycle of links (element names in order), or []."""
    following: dict[str, list[str]] = {name: [] for name in stream.elements}
    for link in stream.links:
        following[link.src].append(link.dst)
    state: dict[str, int] = {}  # 1 on the path, 2 done
    for start in following:
        if state.get(start):
            continue
        path, stack = [start], [iter(following[start])]
        state[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt):]
            elif not state.get(nxt):
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(following[nxt]))
    return []


def _plugins(stream: Stream) -> list[Finding]:
    out = []
    for element in stream.elements.values():
        if element.factory == "?":
            continue
        documented = plugins.documented_props(element.factory)
        if documented is None:
            out.append(Finding(WARNING, stream.name, element.name, "factory", element.line,
                               f"{element.factory!r} is not a plugin the SDK documents; it must be an app's own "
                               "plugin, found in the plugin folder (MX_SDK_HOME/lib/plugins or GST_PLUGIN_PATH)"))
            continue
        for prop in element.props:
            if prop not in documented:
                out.append(Finding(WARNING, stream.name, element.name, prop, element.prop_lines.get(prop, element.line),
                                   f"{element.factory} documents no property {prop!r}; the SDK will refuse or "
                                   "ignore it (check the spelling)"))
    return out


def _devices(stream: Stream) -> list[Finding]:
    stream_device = stream.config.get("deviceId")
    out = []
    for element in stream.elements.values():
        device = element.props.get("deviceId")
        if device is not None and stream_device is not None and str(device) != str(stream_device):
            out.append(Finding(WARNING, stream.name, element.name, "deviceId", element.prop_lines.get("deviceId", 0),
                               f"runs on device {device} while the stream is configured for device {stream_device} "
                               "(stream_config); data then crosses devices"))
    return out


def _file_props(element):
    """(prop, value) of the element's file properties worth checking."""
    for prop in plugins.FILE_PROPS:
        value = element.props.get(prop)
        if not isinstance(value, str) or not value.strip():
            continue
        if prop == "postProcessLibPath" and "/" not in value:
            continue  # a library name: the SDK looks it up in its own lib folder on the host
        yield prop, value


def _host_files(stream: Stream, host: HostFiles) -> list[Finding]:
    out = []
    for element in stream.elements.values():
        for prop, value in _file_props(element):
            where = host.path_of(value)
            if not host.exists.get(where, False):
                out.append(Finding(ERROR, stream.name, element.name, prop, element.prop_lines.get(prop, element.line),
                                   f"{value} not found on {host.where} ({where}); deploy the project or fix the path"))
    return out


def _files(stream: Stream, project: Path) -> list[Finding]:
    out = []
    for element in stream.elements.values():
        for prop, value in _file_props(element):
            line = element.prop_lines.get(prop, element.line)
            if PurePosixPath(value).is_absolute():
                out.append(Finding(INFO, stream.name, element.name, prop, line,
                                   f"{value} is an absolute path on the host; checked only with --host"))
                continue
            if not (project / value).exists():
                out.append(Finding(ERROR, stream.name, element.name, prop, line,
                                   f"{value} not found in the project folder (give --project if it runs elsewhere)"))
    return out


def _model_sizes(stream: Stream, project: Path) -> list[Finding]:
    out = []
    for element in stream.elements.values():
        model_path = element.props.get("modelPath")
        if element.role != plugins.INFER or not isinstance(model_path, str):
            continue
        resize = _feeding_resize(stream, element.name)
        full = project / model_path
        if resize is None or not full.is_file():
            continue
        size = _model_input_hw(full)
        wanted = _resize_hw(resize.props)
        if size is None or wanted is None or size == wanted:
            continue
        out.append(Finding(ERROR, stream.name, element.name, "modelPath", element.prop_lines.get("modelPath", 0),
                           f"the model takes {size[0]}x{size[1]} (height x width) images but {resize.name} "
                           f"resizes to {wanted[0]}x{wanted[1]}; change resizeHeight/resizeWidth or convert the "
                           "model with that input size"))
    return out


def _feeding_resize(stream: Stream, name: str):
    """The resize/crop element whose output the element ``name`` reads (dataSource, else upstream)."""
    source = stream.elements[name].props.get("dataSource")
    if isinstance(source, str) and source in stream.elements:
        candidate = stream.elements[source]
        if candidate.factory in _RESIZE_FACTORIES:
            return candidate
    feeding = {link.dst: link.src for link in stream.links}
    seen = set()
    while name in feeding and name not in seen:
        seen.add(name)
        name = feeding[name]
        if stream.elements[name].factory in _RESIZE_FACTORIES:
            return stream.elements[name]
    return None


def _resize_hw(props: dict) -> tuple[int, int] | None:
    for h_key, w_key in (("resizeHeight", "resizeWidth"), ("cropHeight", "cropWidth")):
        try:
            return int(props[h_key]), int(props[w_key])
        except (KeyError, TypeError, ValueError):
            continue
    return None


def _model_input_hw(path: Path) -> tuple[int, int] | None:
    """(height, width) of the model's first image-like input (NCHW or NHWC), or None.

    A pipeline's inference element names an OM model (or an ONNX one), read by its own reader:
    the general model reader opens pipelines too, through this check.
    """
    from studio.tools.graph.om_reader import read_om
    from studio.tools.graph.onnx_reader import read_onnx

    read = {".om": read_om, ".onnx": read_onnx}.get(path.suffix.lower())
    if read is None:
        return None
    try:
        model = read(path)
    except StudioError:
        return None
    graph = model.main
    for name in graph.inputs:
        shape = graph.value(name).shape
        if not shape or len(shape) != 4 or not all(isinstance(d, int) and d > 0 for d in shape):
            continue
        if shape[1] in (1, 3, 4):
            return shape[2], shape[3]
        if shape[3] in (1, 3, 4):
            return shape[1], shape[2]
    return None
