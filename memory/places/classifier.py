"""Which channel a topic belongs to, learned from what each channel's people said.

A place's topic code (the mean of its messages' vectors) keeps what all of a
server's messages share: "how do I ...", "it fails when ...". A multinomial
logistic regression over the same MiniLM vectors, one class per channel,
learns instead which directions tell the channels apart, and weighs the
shared ones down. Trained per scope and audience on the place memberships
that shape topic codes (``place_messages`` with weight > 0: substantive
messages, not requests for directions), the newest ``PER_CHANNEL`` of each
channel, so a busy channel does not drown a quiet one and training stays
well under a second at any size.

Right channel first on the "where" questions of bench/places_eval.py (MiniLM
vectors, one centroid per channel against this model, offline, 2026-11-25):
over dev, dev2, heldout and heldout2-4 (260 questions, all seen before this
change) 225 with codes and names, 227 at C = 1, 238 at C = 3 and 10, 233 at
C = 30; blended half and half with codes and names, 237.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from memory.vectors import unit, unit_rows

C = 3.0  # inverse regularisation strength of the regression
PER_CHANNEL = 400  # newest memberships per channel used for training
MIN_EXAMPLES = 12  # fewer substantive messages than this in all: no model, topic codes alone decide


@dataclass(frozen=True)
class ChannelClassifier:
    channels: tuple[str, ...]
    model: object  # sklearn LogisticRegression, fitted

    @classmethod
    def train(cls, vectors: np.ndarray, channels: Sequence[str]) -> ChannelClassifier | None:
        """A fitted model, or None when there is too little to learn from (fewer than ``MIN_EXAMPLES``
        messages, or one channel only: nothing to tell apart)."""
        labels = np.asarray(channels)
        if len(labels) < MIN_EXAMPLES or len(set(channels)) < 2:
            return None
        from sklearn.linear_model import LogisticRegression

        model = LogisticRegression(C=C, max_iter=2000).fit(unit_rows(np.asarray(vectors, dtype=np.float32)), labels)
        return cls(tuple(str(c) for c in model.classes_), model)

    def probabilities(self, vector: np.ndarray) -> Mapping[str, float]:
        """P(channel | topic) for every channel the model knows; they sum to 1."""
        probs = self.model.predict_proba(unit(vector).reshape(1, -1))[0]  # type: ignore[attr-defined]
        return {c: float(p) for c, p in zip(self.channels, probs)}
