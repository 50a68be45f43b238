"""`studio graph summary|export` run as a user runs them."""

from __future__ import annotations

import json

from test_cli import run_studio as studio


def test_summary_json_on_real_om(ascend_fixtures, studio_home):
    result = studio("graph", "summary", str(ascend_fixtures / "om" / "dynamic_and_static_graph_without_unfold.om"),
                    "--json", home=studio_home)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    for key in ("format", "nodes", "nodes_total", "edges", "op_types", "inputs", "outputs", "parameters", "subgraphs"):
        assert key in data
    assert data["format"] == "om" and data["nodes"] == 6 and data["nodes_total"] == 18
    assert data["inputs"][0] == {"name": "data_1:0", "shape": [2, 2], "dtype": "float32", "format": "NCHW"}
    assert data["shapes"] == "shapes as ATC compiled them into the model"  # not "inferred", no ONNX option


def test_summary_text_and_export(tmp_path, studio_home):
    from studio.tools.graph.synthetic import write_synthetic

    model = write_synthetic(tmp_path / "m.onnx", 400)
    text = studio("graph", "summary", str(model), home=studio_home)
    assert text.returncode == 0 and "onnx model" in text.stdout and "Conv" in text.stdout
    svg = tmp_path / "m.svg"
    out = studio("graph", "export", str(model), "-o", str(svg), "--expand-all", home=studio_home)
    assert out.returncode == 0, out.stderr
    assert svg.read_text().startswith("<svg") and svg.read_text().count("<g class=\"node\">") > 400
    png = tmp_path / "m.png"
    out = studio("graph", "export", str(model), "-o", str(png), home=studio_home)
    assert out.returncode == 0, out.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    macs = studio("graph", "macs", str(model), "--json", "-o", str(tmp_path / "nd.json"), home=studio_home)
    assert macs.returncode == 0, macs.stderr
    top = json.loads(macs.stdout)["top"]
    assert top and top[0]["macs"] >= top[-1]["macs"]
    assert json.loads((tmp_path / "nd.json").read_text())["results"]


def test_errors_exit_2(ascend_fixtures, studio_home, tmp_path):
    result = studio("graph", "summary", str(ascend_fixtures / "om" / "not_an_om.om"), home=studio_home)
    assert result.returncode == 2 and "IMOD" in result.stderr and "Traceback" not in result.stderr
    bad = tmp_path / "x.gif"
    result = studio("graph", "export", str(ascend_fixtures / "om" / "root_model.om"), "-o", str(bad), home=studio_home)
    assert result.returncode == 2 and "FILE.svg" in result.stderr


def _helpers():
    import graph_helpers

    return graph_helpers


def test_constant_weights_and_given_input_shapes(tmp_path, studio_home):
    model = _helpers().constant_weights_model(tmp_path)
    text = studio("graph", "summary", str(model), home=studio_home)
    assert text.returncode == 0, text.stderr
    assert "parameters: 23,160" in text.stdout and "161 Constant/ConstantOfShape nodes hold weights" in text.stdout
    assert "MACs (main graph): unknown (" in text.stdout  # not 0: the convolutions' sizes are unknown
    assert "x[2]=p2o.DynamicDimension.1" in text.stdout
    assert "--input-shape" in text.stdout  # the fix, spelled as this CLI spells it
    macs = studio("graph", "macs", str(model), "--input-shape", "x=1,3,32,32", "--json", home=studio_home)
    assert macs.returncode == 0, macs.stderr
    data = json.loads(macs.stdout)
    assert data["shapes"] == "shapes given: x=1,3,32,32" and data["unknown"] == 0 and not data["unknown_dims"]
    conv0 = next(row for row in data["top"] if row["name"] == "p2o.Conv.1")
    assert conv0["macs"] == 8 * 32 * 32 * 8 * 9  # output elements x Cin x 3 x 3
    assert not any("Constant" in row["name"] for row in data["top"])
    out = studio("graph", "summary", str(model), "--input-shape", "x=1,3,32,32", home=studio_home)
    assert "shapes given: x=1,3,32,32" in out.stdout and "MACs (main graph): unknown" not in out.stdout
    bad = studio("graph", "macs", str(model), "--input-shape", "image=1,3,32,32", home=studio_home)
    assert bad.returncode == 2 and "no input named 'image'" in bad.stderr and "Traceback" not in bad.stderr


def test_run_shapes_needs_sizes_for_dynamic_dims(tmp_path, studio_home):
    model = _helpers().constant_weights_model(tmp_path, blocks=2)
    refused = studio("graph", "summary", str(model), "--run-shapes", home=studio_home)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "input 'x' is dynamic" in refused.stderr and "--input-shape x=N,3,N,N" in refused.stderr
    ran = studio("graph", "summary", str(model), "--run-shapes", "--input-shape", "x=1,3,16,16", "--json",
                 home=studio_home)
    assert ran.returncode == 0, ran.stderr
    assert any("from a run" in w and "x=1,3,16,16" in w for w in json.loads(ran.stdout)["warnings"])


def test_export_into_a_missing_folder_is_a_clear_error(tmp_path, studio_home):
    model = _helpers().residual_scopes_model(tmp_path, blocks=1100)  # >1,000 sibling scopes
    missing = tmp_path / "no" / "such" / "folder" / "g.svg"
    result = studio("graph", "export", str(model), "-o", str(missing), home=studio_home)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "does not exist" in result.stderr and not missing.parent.exists()
    ok = studio("graph", "export", str(model), "-o", str(tmp_path / "g.svg"), home=studio_home)
    assert ok.returncode == 0, ok.stderr
    assert "section 1 of 2" in (tmp_path / "g.svg").read_text()


def test_export_with_an_overlay_greys_out_the_nodes_it_has_no_value_for(tmp_path, studio_home):
    """A node-data file names one node: that node takes an overlay colour, every other op box is grey,
    none keeps its category colour (which would read as a measurement)."""
    import xml.etree.ElementTree as ET

    from studio.tools.graph.categories import CATEGORY_COLOURS
    from studio.tools.graph.reader import read_model
    from studio.tools.graph.synthetic import write_synthetic

    model = write_synthetic(tmp_path / "m.onnx", 40)
    measured = read_model(model).main.nodes[5].name
    data = tmp_path / "nd.json"
    data.write_text(json.dumps({"name": "one op", "results": {measured: {"value": 1.0}}}))
    svg = tmp_path / "m.svg"
    out = studio("graph", "export", str(model), "-o", str(svg), "--expand-all", "--overlay", str(data),
                 home=studio_home)
    assert out.returncode == 0, out.stderr
    ns = {"s": "http://www.w3.org/2000/svg"}
    fills = {g.find("s:title", ns).text: g.find("s:rect", ns).get("fill")
             for g in ET.parse(svg).getroot().iter("{http://www.w3.org/2000/svg}g") if g.get("class") == "node"}
    assert len(fills) >= 40  # the ops (write_synthetic adds a few around the 40 asked for)
    grey = {name: fill for name, fill in fills.items() if name != measured}
    assert set(grey.values()) == {"#d3d6db"}, set(grey.values())
    assert fills[measured] not in set(CATEGORY_COLOURS.values()) | {"#d3d6db"}


def test_export_left_to_right_runs_across(tmp_path, studio_home):
    from PySide6.QtGui import QImage

    from studio.tools.graph.synthetic import write_synthetic

    model = write_synthetic(tmp_path / "m.onnx", 200)
    sizes = {}
    for direction in ("TB", "LR"):
        png = tmp_path / f"m_{direction}.png"
        out = studio("graph", "export", str(model), "-o", str(png), "--direction", direction, home=studio_home)
        assert out.returncode == 0, out.stderr
        image = QImage(str(png))
        sizes[direction] = (image.width(), image.height())
    assert sizes["TB"][1] > sizes["TB"][0] and sizes["LR"][0] > sizes["LR"][1]  # down, then across
    bad = studio("graph", "export", str(model), "-o", str(tmp_path / "x.png"), "--direction", "up", home=studio_home)
    assert bad.returncode == 2 and "--direction" in bad.stderr
