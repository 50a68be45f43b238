"""A run's printed metrics become a table; its fetch patterns are checked before anything runs."""

from __future__ import annotations

import pytest

from studio.core.errors import UserError
from studio.runs.config import RunConfig
from studio.runs.results import parse_metrics

# What the U-Net tutorial's main.py prints per image and at the end, among other lines.
TUTORIAL = ["I1126 10:00:00.000 Begin to initialize Log.", "image: 0001.png, dice: 0.9312, iou: 0.8713",
            "image: 0002.png, dice: 0.5, iou: 0.3333", "saved result/0002.png", "Cross Valid dice coeff is: 0.7156",
            "version 2.0.4 (build 11)"]


def test_tutorial_lines_become_rows_with_their_image_as_label():
    table = parse_metrics(TUTORIAL)
    assert table.columns == ["dice", "iou", "Cross Valid dice coeff"]
    assert [(r.line, r.label, r.values) for r in table.rows] == [
        (2, "image 0001.png", {"dice": 0.9312, "iou": 0.8713}),
        (3, "image 0002.png", {"dice": 0.5, "iou": 0.3333}),
        (5, "line 5", {"Cross Valid dice coeff": 0.7156})]
    assert table.means() == pytest.approx({"dice": (0.9312 + 0.5) / 2, "iou": (0.8713 + 0.3333) / 2})


def test_file_names_and_versions_are_no_metrics():
    table = parse_metrics(["image: img_2.jpg dice=0.5", "model resnet50.om loaded", "top1: 76.1%, mAP50 = .5",
                           "step 5 loss: 1e-3."])
    assert [r.values for r in table.rows] == [{"dice": 0.5}, {"top1": 76.1, "mAP50": 0.5}, {"loss": 0.001}]
    assert table.rows[0].label == "image img_2.jpg"


def test_a_configured_pattern_reads_only_what_it_names():
    table = parse_metrics(TUTORIAL, r"(?P<name>dice): (?P<value>[0-9.]+)")
    assert table.columns == ["dice"] and [r.values["dice"] for r in table.rows] == [0.9312, 0.5]


@pytest.mark.parametrize("fetch, metrics, message", [
    (["../secret"], "", "fetch pattern '../secret'"),
    (["/etc/passwd"], "", "fetch pattern '/etc/passwd'"),
    (["out/*.npy; rm -rf ~"], "", "no spaces"),
    ([".?/secret.txt"], "", "can match '..'"),
    (["out/.*"], "", "can match '..'"),
    (["out/.[a-z]*/x"], "", "can match '..'"),
    (["out/.*./x"], "", "can match '..'"),
    ([], "(?P<name>dice", "does not compile"),
    ([], r"dice: (?P<value>\d+)", "no group name"),
])
def test_bad_fetch_patterns_and_metric_patterns_are_refused_with_the_field(fetch, metrics, message):
    with pytest.raises(UserError) as raised:
        RunConfig("seg", "python main.py", fetch=fetch, metrics=metrics).validate()
    assert message in str(raised.value.format()) and ("field fetch" if fetch else "field metrics") in \
        raised.value.format()


def test_fetch_and_metrics_round_trip_through_the_toml_table():
    config = RunConfig("seg", "python main.py", fetch=["result/*.png", "*.log"], metrics=r"(?P<name>\w+)=(?P<value>\S+)")
    from studio.core.serial import to_json

    assert RunConfig.from_toml(to_json(config)) == config


@pytest.mark.parametrize("name", ["../secret.txt", "a/../../x", "/etc/passwd", "./../x"])
def test_a_name_the_host_lists_outside_the_working_folder_stops_the_fetch(name):
    from studio.runs.results import judge_listing

    raw = f"f=out/a.npy\0d=/w/out\0f={name}\0d=/w\0cwd=/w\0".encode()
    with pytest.raises(UserError, match="outside the working folder"):
        judge_listing(raw, "box:/w")


def test_names_are_normalised_and_files_behind_a_linked_folder_set_aside():
    from studio.runs.results import judge_listing

    raw = (b"f=./out/a.npy\0d=/w/out\0f=out//b.npy\0d=/w/out\0f=etcl/passwd\0d=/etc\0"
           b"f=top.log\0d=/w\0f=gone/x\0d=\0cwd=/w\0")
    listing = judge_listing(raw, "box:/w")
    assert listing.folder == "/w"
    assert listing.files == ["out/a.npy", "out/b.npy", "top.log"]
    assert listing.through_links == ["etcl/passwd", "gone/x"]
