"""Turkish word sets for the bias framework, published as the data package `tr`."""

from pathlib import Path

from bias.api import DataPackage

PACKAGE = DataPackage(
    language="tr",
    root=Path(__file__).parent / "data",
    description="Turkish: WEAT 1-10 adapted to Turkish, labour-market tests, SEAT templates, LPBS, "
    "sentence pairs, debiasing lists, analogies.",
)
