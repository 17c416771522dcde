"""Unit vectors for tests: random ones, ones at a chosen similarity to another, and
weighted blends."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence


def unit(seed: int, dimension: int = 384) -> list[float]:
    """A random unit vector, the same for the same seed."""
    rng = random.Random(seed)
    values = [rng.gauss(0, 1) for _ in range(dimension)]
    norm = math.sqrt(sum(v * v for v in values))
    return [v / norm for v in values]


def at_cosine(base: list[float], cosine: float, seed: int) -> list[float]:
    """A unit vector at exactly `cosine` similarity to the unit vector `base`."""
    noise = unit(seed, len(base))
    along = sum(a * b for a, b in zip(noise, base, strict=True))
    ortho = [n - along * b for n, b in zip(noise, base, strict=True)]
    norm = math.sqrt(sum(o * o for o in ortho))
    sine = math.sqrt(1 - cosine * cosine)
    return [cosine * b + sine * o / norm for b, o in zip(base, ortho, strict=True)]


def mix(*parts: tuple[float, Sequence[float]]) -> list[float]:
    """The unit vector along the weighted sum of `parts` ((weight, vector) pairs)."""
    total = [sum(w * v[i] for w, v in parts) for i in range(len(parts[0][1]))]
    norm = math.sqrt(sum(x * x for x in total))
    return [x / norm for x in total]
