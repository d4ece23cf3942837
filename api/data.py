"""The data kinds beyond the common ones (FISE, labelled texts, similarity pairs, BBQ questions,
StereoSet examples) and the helpers format importers use to read files.

Part of the public API (`bias.api`): first-party plugins import these names from here only.
"""

from __future__ import annotations

from bias.core.data import fise_tests as fise_data
from bias.core.data.fise_tests import FiseTest, Stimulus
from bias.core.data.labelled_texts import LabelledTexts
from bias.core.data.bias_questions import (
    PLAIN_PLACEHOLDERS,
    BiasQuestion,
    BiasQuestions,
    fill,
    placeholders,
    template_with,
)
from bias.core.model import BBQ, FISE, LABELLED_TEXTS, SIMILARITY_PAIRS, STEREOSET
from bias.core.params import is_layer, layer_value
from bias.core.data.similarity_pairs import MIN_PAIRS, SimilarityPairs
from bias.core.data.stereoset import GOLD_LABELS, StereoExample, StereoSentence, StereoSetExamples
from bias.core.text import listed, shown
from bias.core.data.wordsets import normalise
from bias.core.data.record_bounds import check_file_words
from bias.core.data.file_reading import (
    MAX_DATASET_FILE,
    content_lines,
    file_head,
    parse_json,
    read_json,
    read_text,
)

__all__ = [
    "BBQ",
    "BiasQuestion",
    "BiasQuestions",
    "content_lines",
    "file_head",
    "FISE",
    "fise_data",
    "FiseTest",
    "GOLD_LABELS",
    "is_layer",
    "LABELLED_TEXTS",
    "LabelledTexts",
    "listed",
    "layer_value",
    "MIN_PAIRS",
    "normalise",
    "parse_json",
    "placeholders",
    "PLAIN_PLACEHOLDERS",
    "fill",
    "read_json",
    "read_text",
    "MAX_DATASET_FILE",
    "check_file_words",
    "shown",
    "SIMILARITY_PAIRS",
    "SimilarityPairs",
    "template_with",
    "STEREOSET",
    "StereoExample",
    "StereoSentence",
    "StereoSetExamples",
    "Stimulus",
]
