"""Norwegian Bokmål word sets for the bias framework, published as the data package `no`."""

from pathlib import Path

from bias.api import DataPackage

PACKAGE = DataPackage(
    language="no",
    root=Path(__file__).parent / "data",
    description="Norwegian Bokmål: WEAT 1-10 adapted to Norwegian, labour-market tests for Norway, "
    "SEAT templates, LPBS, sentence pairs, debiasing lists and analogies.",
)
