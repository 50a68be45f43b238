"""One path per operation, here or on a host.

Each operation module (``profile``, ``dump``, ``bench``, ``convert``, ``fp16_check``,
``cross_check``, ``msprof``, ``npu_dump``) has a ``Request`` (a dataclass with ``to_argv()``, the
``studio`` command line that does exactly this request, and ``from_args(namespace)``, the request
the command line's parsed arguments describe; where its options are declared as field metadata,
:mod:`studio.core.options` generates the parser, both directions and ``for_host``), a ``Result``
with ``to_json()``, and one ``run(request, where, context, cancel)`` job: ``where`` is None or
"local" for this computer, or a host name. On a host, :func:`studio.ops.engine.run_on_engine`
runs the same ``to_argv()`` with Studio's engine there. The command line and the panels both call ``run``; this package imports
neither of them.
"""
