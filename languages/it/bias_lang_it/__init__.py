"""Italian word sets for the bias framework, published as the data package `it`."""

from pathlib import Path

from bias.api import DataPackage

PACKAGE = DataPackage(
    language="it",
    root=Path(__file__).parent / "data",
    description="Italian: WEAT 1-10 adapted to Italian, labour-market tests, SEAT templates, LPBS, "
    "sentence pairs, debiasing lists, analogies.",
)
