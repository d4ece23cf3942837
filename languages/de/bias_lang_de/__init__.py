"""German word sets for the bias framework, published as the data package `de`."""

from pathlib import Path

from bias.api import DataPackage

PACKAGE = DataPackage(
    language="de",
    root=Path(__file__).parent / "data",
    description="German: WEAT 1-10 adapted to German, labour-market tests for Germany, SEAT "
    "templates, "
    "LPBS, sentence pairs, debiasing lists and analogies.",
)
