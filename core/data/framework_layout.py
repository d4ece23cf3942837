"""The folder layout of the BIAS Detection Framework's datasets: `<lang>/<KIND>/<test>.<ext>`.

Its folder codes are ISO 639-1 except two: Turkish lives in `tk` (ISO: Turkmen) and its README calls
Dutch `ne` (ISO: Nepali). Files found in such a folder get the language the framework meant, with a
note saying so, so SEAT templates, capitalisation and reports use the right language.
"""

from __future__ import annotations

from pathlib import Path

# The framework's folder codes that are not the ISO 639-1 code of the language they hold.
FOLDER_CODES = {"tk": "tr", "ne": "nl"}
LANGUAGES = ("de", "en", "is", "it", "nl", "no", "tr")
# Kind folders of the layout (case as the framework writes them) and the metric each feeds.
KIND_FOLDERS = {
    "WEAT": "weat",
    "SEAT": "seat",
    "genSEAT": "seat",
    "LPBS": "lpbs",
    "CROWS": "crows",
    "FISE": "fise",
}


def language_code(folder: str) -> tuple[str, str | None]:
    """The ISO code of a framework language folder, and a note when the folder's name differs."""
    code = folder.strip()
    if code in FOLDER_CODES:
        iso = FOLDER_CODES[code]
        return (
            iso,
            f"folder '{code}' read as language '{iso}' (the BIAS Detection Framework's "
            "code for it)",
        )
    return code, None


def language_of(path: Path) -> tuple[str | None, str | None]:
    """The language of a file in the framework's layout (`.../<lang>/<KIND>/<file>`), else (None,
    None)."""
    parts = Path(path).parts
    if (
        len(parts) < 3
        or parts[-2] not in KIND_FOLDERS
        and parts[-2].upper() not in {k.upper() for k in KIND_FOLDERS}
    ):
        return None, None
    code, note = language_code(parts[-3])
    if code not in LANGUAGES:
        return None, None
    return code, note


def kind_folder(path: Path) -> str | None:
    """The KIND folder (as `KIND_FOLDERS` spells it) of a file in the framework's layout, else None:
    the folder the framework put a file in says what it is, where the suffix alone cannot (`.txt` is
    a WEAT test under WEAT/, a FISE trait list under FISE/, and the sentence frames beside a SEAT
    test)."""
    if language_of(path)[0] is None:
        return None
    parent = Path(path).parent.name
    return next((k for k in KIND_FOLDERS if k.upper() == parent.upper()), None)
