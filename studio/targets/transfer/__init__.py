"""Moving folders between this computer and a host: tar streams, upload, download, scan, fetch.

Everything here acts on pinned folders (directory handles, ``cd -P`` + ``./NAME``) and writes
under temporary names renamed at the end. The deploy engine (``studio.tools.deploy``) plans what
to move; the operations layer and the run configurations fetch results with :mod:`.fetch`.
"""
