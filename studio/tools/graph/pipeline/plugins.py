"""The MindX SDK (Vision SDK) plugins a pipeline may name: their role and documented properties.

From the SDK's plugin reference (docs/zh/api/plugins.md of Ascend's Vision SDK): every ``mxpi_``
plugin also takes the common properties ``status``, ``deviceId`` and ``dataSource`` (and
GStreamer's ``parent`` and ``name``); every post-processor takes the post-processing base's.
Apps may build plugins of their own (a contrib app's ``fairmotpostprocess``): an unknown factory
is a warning, not an error, since only the host's plugin folder can tell.
"""

from __future__ import annotations

from dataclasses import dataclass

# Roles, in the order a stream usually runs them; the graph view colours elements by role.
SOURCE, DECODE, PREPROCESS, INFER, POSTPROCESS, OSD, FLOW, SINK = (
    "source", "decode", "preprocess", "infer", "postprocess", "osd", "flow", "sink")
ROLE_LABELS = {SOURCE: "Source", DECODE: "Decode / encode", PREPROCESS: "Resize / crop / transform",
               INFER: "Model inference", POSTPROCESS: "Post-processing", OSD: "On-screen display",
               FLOW: "Queue / tee / routing", SINK: "Sink / output", "unknown": "Unknown plugin"}

COMMON = ("status", "deviceId", "dataSource", "parent", "name")
# GStreamer's base classes give every native source and sink these (the SDK's tables omit them).
_BASE_SRC = "blocksize num-buffers typefind do-timestamp"
_BASE_SINK = ("sync max-lateness qos async ts-offset enable-last-sample last-sample blocksize render-delay "
              "throttle-time max-bitrate processing-deadline")
_POSTPROCESS_BASE = ("postProcessLibPath", "labelPath", "postProcessConfigPath", "postProcessConfigContent",
                     "dataSourceResize", "dataSourceRoiBoxes", "dataSourceImage", "funcLanguage", "className",
                     "pythonModule")


@dataclass(frozen=True)
class Plugin:
    """One plugin: its factory name, role and documented properties (besides the common ones)."""

    factory: str
    role: str
    props: tuple[str, ...] = ()


def _plugins(role: str, table: dict[str, str]) -> list[Plugin]:
    return [Plugin(name, role, tuple(p for p in props.split() if p)) for name, props in table.items()]


_TABLE = [
    *_plugins(SOURCE, {
        "appsrc": "blocksize num-buffers typefind do-timestamp caps size stream-type max-bytes format block "
                  "is-live min-latency max-latency emit-signals min-percent current-level-bytes duration",
        "mxpi_rtspsrc": "rtspUrl channelId timeout fpsMode tlsValidationFlags tlsCertFilePathList "
                        "async-handling message-forward",
        "filesrc": f"location {_BASE_SRC}",
        "mxpi_loaddata": "location",
    }),
    *_plugins(SINK, {
        "mxpi_dataserialize": "outputDataKeys eraseHeaderVecFlag",
        "appsink": "sync max-lateness qos async ts-offset enable-last-sample last-sample blocksize render-delay "
                   "throttle-time max-bitrate processing-deadline caps eos emit-signals max-buffers drop "
                   "wait-on-eos buffer-list",
        "fakesink": f"silent dump signal-handoffs state-error can-activate-push can-activate-pull num-buffers "
                    f"{_BASE_SINK}",
        "filesink": f"append buffer-mode buffer-size location max-transient-error-timeout o-sync {_BASE_SINK}",
        "mxpi_dumpdata": "filterMetaDataKeys requiredMetaDataKeys location dumpMemoryData",
    }),
    *_plugins(FLOW, {
        "mxpi_parallel2serial": "removeParentData",
        "mxpi_distributor": "classIds distributeAll channelIds",
        "mxpi_synchronize": "config",
        "queue": "current-level-buffers current-level-bytes current-level-time flush-on-eos leaky max-size-buffers "
                 "max-size-bytes max-size-time min-threshold-buffers min-threshold-bytes min-threshold-time silent",
        "tee": "allow-not-linked has-chain last-message num-src-pads pull-mode silent",
        "mxpi_datatransfer": "transferMode removeSourceData",
        "mxpi_skipframe": "frameNum",
        "mxpi_channelselector": "channelIds",
    }),
    *_plugins(DECODE, {
        "mxpi_imagedecoder": "imageFormat cvProcessor outputDataFormat dataType formatAdaptation handleMethod",
        "mxpi_videodecoder": "inputVideoFormat outputImageFormat vdecChannelId outMode outPicWidthMax "
                             "outPicHeightMax skipFrame vdecResizeWidth vdecResizeHeight",
        "mxpi_videoencoder": "iFrameInterval imageHeight imageWidth fps inputFormat outputFormat vencChannelId "
                             "rcMode srcRate maxBitRate ipProp frameReleaseTimeOut",
        "mxpi_imageencoder": "encodeLevel",
    }),
    *_plugins(PREPROCESS, {
        "mxpi_imageresize": "removeParentData parentName resizeHeight resizeWidth maxDimension minDimension "
                            "resizeType scaleValue RGBValue interpolation cvProcessor paddingType paddingHeight "
                            "paddingWidth paddingColorB paddingColorG paddingColorR handleMethod",
        "mxpi_imagecrop": "parentName dataSourceImage leftExpandRatio rightExpandRatio upExpandRatio "
                          "downExpandRatio resizeHeight resizeWidth maxDimension minDimension resizeType RGBValue "
                          "paddingType cvProcessor autoDetectFrame cropPointx0 cropPointx1 cropPointy0 cropPointy1 "
                          "handleMethod cropType",
        "mxpi_imagenormalize": "alpha beta format dataType processType",
        "mxpi_opencvcentercrop": "cropHeight cropWidth",
        "mxpi_warpperspective": "debugMode oriImageDataSource",
        "mxpi_rotation": "dataSourceWarp dataSourceClass rotateCode rotCondition criticalValue",
        "mxpi_roigenerator": "splitType blockHeight blockWidth chessboardHeight chessboardWidth overlapHeight "
                             "overlapWidth cropRoi mergeRoi",
        "mxpi_facealignment": "dataSourceImage dataSourceKeyPoint afterFaceAlignmentHeight afterFaceAlignmentWidth",
    }),
    *_plugins(INFER, {
        "mxpi_modelinfer": "modelPath postProcessConfigPath postProcessConfigContent labelPath parentName "
                           "postProcessLibPath tensorFormat pictureCropName waitingTime outputDeviceId "
                           "dynamicStrategy checkImageAlignInfo",
        "mxpi_tensorinfer": "modelPath outputDeviceId waitingTime dynamicStrategy singleBatchInfer "
                            "outputHasBatchDim skipModelCheck",
    }),
    *_plugins(POSTPROCESS, {name: " ".join(_POSTPROCESS_BASE) for name in (
        "mxpi_objectpostprocessor", "mxpi_classpostprocessor", "mxpi_semanticsegpostprocessor",
        "mxpi_textgenerationpostprocessor", "mxpi_textobjectpostprocessor", "mxpi_keypointpostprocessor")}),
    *_plugins(POSTPROCESS, {
        "mxpi_motsimplesort": "dataSourceDetection dataSourceFeature trackThreshold lostThreshold",
        "mxpi_motsimplesortV2": "dataSourceDetection dataSourceFeature trackThreshold lostThreshold",
        "mxpi_nmsoverlapedroiV2": "dataSourceDetection dataSourceBlock nmsThreshold",
        "mxpi_semanticsegstitcher": "dataSourceSemanticSeg dataSourceCropRoi dataSourceMergeRoi",
        "mxpi_objectselector": "FirstDetectionFilter",
        "mxpi_qualitydetection": "qualityDetectionConfigContent qualityDetectionConfigPath",
    }),
    *_plugins(OSD, {
        "mxpi_opencvosd": "dataSourceImage dataSourceOsd",
        "mxpi_object2osdinstances": "colorMap rectThickness rectLineType fontFace fontScale fontThickness "
                                    "fontLineType createText",
        "mxpi_class2osdinstances": "dataSourceClass dataSourceImage topK position fontFace fontScale fontThickness "
                                   "fontLineType createRect colorMap rectThickness rectLineType",
        "mxpi_osdinstancemerger": "dataSourceList",
        "mxpi_channelimagesstitcher": "channelIds outputWidth outputHeight RGBvalue",
        "mxpi_channelosdcoordsconverter": "dataSourceStitchInfo dataSourceOsds channelIds enableFixedArea",
        "mxpi_bufferstablizer": "tolerance frequency allowDelay",
    }),
]
PLUGINS: dict[str, Plugin] = {p.factory: p for p in _TABLE}

# Properties that name a file the app reads (checked to exist); lists are comma separated.
FILE_PROPS = ("modelPath", "postProcessConfigPath", "labelPath", "postProcessLibPath", "qualityDetectionConfigPath")
# Properties that name other elements (drawn as dashed edges, checked to exist).
REFERENCE_PROPS = ("dataSource", "parentName", "dataSourceList", "dataSourceImage", "dataSourceClass",
                   "dataSourceWarp", "dataSourceDetection", "dataSourceFeature", "dataSourceKeyPoint",
                   "dataSourceOsd", "dataSourceOsds", "dataSourceStitchInfo", "dataSourceResize",
                   "dataSourceRoiBoxes", "dataSourceBlock", "dataSourceSemanticSeg", "dataSourceCropRoi",
                   "dataSourceMergeRoi", "oriImageDataSource", "outputDataKeys", "motSource")


def role_of(factory: str) -> str:
    """The role of a factory ("unknown" for a plugin the SDK does not document)."""
    plugin = PLUGINS.get(factory)
    return plugin.role if plugin else "unknown"


def documented_props(factory: str) -> set[str] | None:
    """Every property the SDK documents for ``factory`` (None when the plugin is unknown)."""
    plugin = PLUGINS.get(factory)
    if plugin is None:
        return None
    extra = _POSTPROCESS_BASE if plugin.role == POSTPROCESS else ()
    return set(plugin.props) | set(COMMON) | set(extra)
