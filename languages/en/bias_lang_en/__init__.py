"""English word sets for the bias framework, published as the data package `en`."""

from pathlib import Path

from bias.api import DataPackage

PACKAGE = DataPackage(
    language="en",
    root=Path(__file__).parent / "data",
    description="English: the WEAT tests of Caliskan et al. (2017), SEAT templates, LPBS "
    "templates, "
    "sentence pairs, debiasing lists and analogies.",
)
