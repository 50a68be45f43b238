"""The base every other layer stands on: errors (UserError), jobs (Progress, CancelToken), workers,
paths, settings, model inputs, the format registry and the other small modules with no knowledge
of engines, hosts or Qt. Nothing here imports anything of Studio outside ``studio.core``.
"""
