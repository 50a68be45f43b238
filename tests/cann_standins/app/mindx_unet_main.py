"""Stand-in for the U-Net tutorial's ``main.py`` on a MindX SDK host (no SDK, no NPU here).

Reads the pipeline as the SDK would (the ``mxpi_imageresize`` size, the ``mxpi_tensorinfer``
``modelPath``), runs the model over ``data/images/*.png`` — an ONNX model with ONNX Runtime, in
place of the .om — writes each predicted mask to ``result/<image>`` and prints Dice and IoU
against ``data/masks/<image>`` the way the tutorial's script prints them.
"""

import glob
import json
import os
import sys

import cv2
import numpy as np
import onnxruntime as ort

pipeline = json.load(open(sys.argv[1] if len(sys.argv) > 1 else "pipeline/unet_simple_opencv.pipeline"))
stream = next(iter(pipeline.values()))
elements = [e for e in stream.values() if isinstance(e, dict) and "factory" in e]
infer = next(e for e in elements if e["factory"] == "mxpi_tensorinfer")
resize = next(e for e in elements if e["factory"] == "mxpi_imageresize")
height, width = int(resize["props"]["resizeHeight"]), int(resize["props"]["resizeWidth"])
session = ort.InferenceSession(infer["props"]["modelPath"], providers=["CPUExecutionProvider"])
name_in = session.get_inputs()[0].name
os.makedirs("result", exist_ok=True)
print("I1126 stand-in MindX SDK: stream", next(iter(pipeline)), "created")
dices = []
for path in sorted(glob.glob("data/images/*.png")):
    image = os.path.basename(path)
    rgb = cv2.resize(cv2.cvtColor(cv2.imread(path), cv2.COLOR_BGR2RGB), (width, height))
    scores = session.run(None, {name_in: rgb[None].astype(np.uint8)})[0]
    predicted = scores[0].argmax(0).astype(np.uint8)
    truth = (cv2.imread(os.path.join("data/masks", image), cv2.IMREAD_GRAYSCALE) > 0).astype(np.uint8)
    both, either = int((predicted & truth).sum()), int((predicted | truth).sum())
    dice = 2 * both / (int(predicted.sum()) + int(truth.sum())) if either else 1.0
    iou = both / either if either else 1.0
    cv2.imwrite(os.path.join("result", image), predicted * 255)
    dices.append(dice)
    print(f"image: {image}, dice: {dice:.4f}, iou: {iou:.4f}")
print(f"Cross Valid dice coeff is: {sum(dices) / len(dices):.4f}")
