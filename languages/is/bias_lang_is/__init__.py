"""Icelandic word sets for the bias framework, published as the data package `is`."""

from pathlib import Path

from bias.api import DataPackage

PACKAGE = DataPackage(
    language="is",
    root=Path(__file__).parent / "data",
    description="Icelandic: WEAT 1-10 adapted to Icelandic, labour-market tests, SEAT "
    "templates, LPBS, "
    "sentence pairs, debiasing lists, analogies.",
)
