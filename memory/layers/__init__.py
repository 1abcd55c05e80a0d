"""Memory layers: one module each, all on the seam in ``memory.layers.base``."""
