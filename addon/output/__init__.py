"""Output writers, one place for every engine: keyframes (``keyframes``), shape keys and PC2 caches (``deform``)."""
