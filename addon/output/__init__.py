"""Output writers, one place for every engine: keyframes (``keyframes``), shape keys and PC2 caches (``deform``),
and where the PC2 caches go and how they are named (``caches``)."""
