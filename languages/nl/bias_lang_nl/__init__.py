"""Dutch word sets for the bias framework, published as the data package `nl`."""

from pathlib import Path

from bias.api import DataPackage

PACKAGE = DataPackage(
    language="nl",
    root=Path(__file__).parent / "data",
    description="Dutch: WEAT 1-10 adapted to Dutch, labour-market tests for the Netherlands, SEAT "
    "templates, LPBS, sentence pairs, debiasing lists and analogies.",
)
