"""Intervals of a proportion (an accuracy, a rate k / n): Wilson's score interval, which stays
inside [0, 1] and keeps its coverage near 0 and 1 and for small n, and the normal approximation
that some published studies report (the Dutch probing study's accuracies)."""

from __future__ import annotations

import math

Z95 = 1.959963984540054  # the 97.5% point of the standard normal


def normal_interval(p: float, n: int, z: float = Z95) -> tuple[float, float]:
    """p +- z sqrt(p(1-p)/n), clipped to [0, 1]."""
    half = z * math.sqrt(p * (1 - p) / n)
    return max(0.0, p - half), min(1.0, p + half)


def wilson_interval(p: float, n: float, z: float = Z95) -> tuple[float, float]:
    """Wilson's score interval of a proportion p observed over n trials."""
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)
