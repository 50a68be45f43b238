"""MindX SDK pipelines: read (with lines), draw as a graph, check, and edit one property in place."""
