"""Small vector helpers shared by the memory layers (MiniLM vectors, float32, and pgvector's ``Vector``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def vec(value: object) -> np.ndarray:
    """A vector as float32 numpy (pgvector's asyncpg codec gives ``Vector`` objects)."""
    to_numpy = getattr(value, "to_numpy", None)
    return np.asarray(to_numpy() if to_numpy is not None else value, dtype=np.float32)


def unit(v: object) -> np.ndarray:
    """``v`` scaled to length 1 (a zero vector stays zero)."""
    v = vec(v)
    norm = float(np.linalg.norm(v))
    return v / norm if norm > 0 else v


def unit_rows(x: np.ndarray) -> np.ndarray:
    """Each row of ``x`` scaled to length 1 (zero rows stay zero)."""
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.where(norms > 0, norms, 1.0)).astype(np.float32)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(unit(a) @ unit(b))


def centroid(vectors: Sequence[np.ndarray], weights: Sequence[float] | None = None) -> np.ndarray:
    """The unit-length weighted mean of ``vectors`` (all weights zero: the plain mean)."""
    m = np.asarray([vec(x) for x in vectors], dtype=np.float32)
    if m.ndim != 2 or len(m) == 0:
        raise ValueError("a centroid needs at least one vector")
    w = np.ones(len(m), dtype=np.float32) if weights is None else np.asarray(weights, dtype=np.float32)
    if float(w.sum()) <= 0:
        w = np.ones(len(m), dtype=np.float32)
    return unit((m * w[:, None]).sum(axis=0) / float(w.sum()))
