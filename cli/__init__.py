"""The command line, beside the bridge: ``python -m contact_lab bake ...`` (the root ``__main__.py`` is its entry).

:mod:`.command` parses the arguments and maps outcomes to exit codes; :mod:`.batch` bakes several files, each in a
child process (:mod:`.children`), locally or on a Dask cluster (:mod:`.cluster`), drawing :mod:`.progress`;
:mod:`.single` bakes one file in this process with the add-on's driver. Only :mod:`.single` imports ``bpy``;
none of it imports ``panels/`` or ``operators/``.
"""
