"""Surface friction: :mod:`.export` reads every engine's friction inputs (textures, attributes, UV maps) and
:mod:`.preview` paints them onto the mesh for the viewport."""
