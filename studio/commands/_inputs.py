"""The data a command that judges a model runs it on: ``--input NAME=FILE.npy`` arrays and seeded
random data for the inputs ``--input-shape`` sizes (options declared in :class:`studio.ops.inputs.ModelRun`)."""

from __future__ import annotations


def model_feeds(args) -> dict:
    """The arrays of ``--input`` files and, for the inputs ``--input-shape`` sizes, seeded random
    data of that shape (``--seed``), made as every engine makes it
    (:func:`studio.tools.accuracy.local_dump.make_inputs`); inputs neither names are left to the
    engine, which never guesses a dynamic dim."""
    from studio.ops.inputs import inputs_from_args, load_arrays

    files, shapes = inputs_from_args(args, args.model)
    given = load_arrays(files)
    if not shapes:
        return given
    from studio.tools.accuracy.local_dump import load_model, make_inputs

    return make_inputs(load_model(args.model), args.model, given, args.seed, shapes, [])
