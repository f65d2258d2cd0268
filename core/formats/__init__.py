"""File formats the engines read and write (``pc2``: the point-cache format of Blender's Mesh Cache)."""
