"""Cluster view of a multi-rank profile: where each rank's step time went, and why one rank is late.

``open_cluster(folder)`` reads a folder holding N ranks — PyTorch-NPU ``*_ascend_pt`` folders
(text or db export), msprof ``PROF_*`` device folders, or msprof-analyze's
``cluster_analysis_output`` — and returns a :class:`~.report.ClusterReport`: per-rank step time
split the way msprof-analyze splits it (computing, communication not overlapped, overlapped, free,
bubble, preparing), pipeline-stage maxima, the communication matrix between global ranks, the
parallel layout from ``profiler_metadata.json``, and the slow ranks and slow links with their
evidence. One module per job:

- :mod:`.discover`: which ranks a folder holds and which of their files will be read;
- :mod:`.step_time`: each rank's step trace time (analysis.db, step_trace_time.csv, msprof timeline);
- :mod:`.matrix`: the communication matrix with local group ranks turned into global ranks;
- :mod:`.bandwidth`: per-rank transport bandwidth (what a slow link is judged on);
- :mod:`.groups`: the TP/PP/DP/CP/EP layout;
- :mod:`.slow`: slow ranks and slow links (spread over 5 %);
- :mod:`.analysis_output`: msprof-analyze's own cluster output read back;
- :mod:`.engine`: all of it together.
"""

from studio.tools.profiler.cluster.engine import open_cluster
from studio.tools.profiler.cluster.report import ClusterReport

__all__ = ["ClusterReport", "open_cluster"]
