"""Check Scene: every problem of a scene that can be found without simulating.

:mod:`.validate` runs the checks (``validate_scene``, ``check_before_bake``); :mod:`.findings` (a leaf) holds the
:class:`~.findings.Finding` type every check returns; :mod:`.physics` (sizes, mass ratios, overlaps, lattices, with
:mod:`.overlap` and :mod:`.ipc_start`), :mod:`.ranges` (every setting's range), :mod:`.refusals` (what the exports
refuse) and :mod:`.library` (linked data) are the checks.
"""
