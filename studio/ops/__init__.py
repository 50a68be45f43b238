"""One path per operation, here or on a host.

Each operation module (``profile``, ``dump``, ``bench``, ``convert``, ``fp16_check``,
``cross_check``, ``msprof``, ``npu_dump``) has a ``Request`` (a dataclass with ``to_argv()``, the
``studio`` command line that does exactly this request, and ``from_args(namespace)``, the request
the command line's parsed arguments describe), a ``Result`` with ``to_json()``, and one
``run(request, where, context, cancel)`` job: ``where`` is None or "local" for this computer, or a
host name. On a host, :func:`studio.ops.engine.run_on_engine` runs the same ``to_argv()`` with
Studio's engine there. The command line and the panels both call ``run``; this package imports
neither of them.
"""
