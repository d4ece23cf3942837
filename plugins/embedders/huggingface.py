"""Hugging Face models (BERT, RoBERTa, MiniLM, GPT-2, ...) as word, contextual and language-model
embedders.

Word vectors are "word encodings": each word is fed alone between the tokenizer's own special tokens
(`[CLS] word [SEP]`) and its sub-token vectors are pooled, which is how WEAT is applied to
contextual models. Decoder LLMs (GPT-2, OPT, BLOOM, Llama, Qwen, ...) keep their own conventions: a
word is its last sub-token (the one that has seen the whole word), a sentence its last token (`bos`
says whether a start token is put before texts whose tokenizer adds none). Sentence and span vectors
follow docs/methods.md (seat): a span is found through the fast tokenizer's character offsets
(`bias.core.models.hf.spans`).

The model is loaded with its head (masked-LM, causal-LM, or none, read from the config's
`architectures`), so one embedder serves vector metrics (from the hidden states) and scoring metrics
(from the head, see `bias.core.models.hf.lm_scoring`). Encodings are cached on disk
(`bias.core.models.encoding_cache`), so a second run of the same experiment does not run the model
again. The options and the loaded model are `HuggingFaceModel`'s (`bias.api.hf`); this class says
what the model computes, and the work is done in `bias.core.models.hf`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import attrs
import numpy as np
from bias.api import (
    BiasError,
    Capability,
    ChoiceRequest,
    ChoiceScores,
    GenerationRequest,
    Generations,
    MaskedRequest,
    Sampling,
    TokenScores,
    Tokens,
    WordVectors,
)
from bias.api.hf import (
    HuggingFaceModel,
    POOLINGS,
    PooledInput,
    batching,
    chat_template,
    choice_scoring,
    compute,
    generation,
    lm_scoring,
    loading,
    vectors,
)


@attrs.define
class HuggingFaceEmbedder(HuggingFaceModel):
    """Any Hugging Face model given as a local folder, a `pkg:` location or a Hub id.

    Every row is a mean over a set of token positions of one hidden layer (or a mean of layers), so
    sentence vectors, span vectors and word encodings share one batched code path. Text is never
    lowercased here: the model's own tokenizer decides, so cased models stay cased.

    `head` is the head asked for (auto, masked, causal, none) and is never changed; the head really
    loaded (masked, causal or none) is the loaded model's, which `available()` reports to the
    runner.

    What is fetched, and from where: a local folder or `pkg:` location is read from disk and nothing
    is downloaded. A Hub id (`hf:org/name`) is looked up in the local Hugging Face cache first; only
    when it is missing there, and HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE are not set, are
    config.json, the tokenizer files and the weights (safetensors preferred) downloaded from
    https://huggingface.co (or $HF_ENDPOINT) into that cache. An unreachable Hub is reported within
    two seconds. The manifest records the revision (the snapshot's commit) and the SHA-256 of every
    file of a Hub model. Model code from the Hub runs only with --trust-remote-code on the command
    line.
    """

    name: ClassVar[str] = "hf"
    summary: ClassVar[str] = (
        "Hugging Face model (BERT, RoBERTa, MiniLM, GPT-2, ...): word encodings, sentence and "
        "span vectors, masked- or causal-LM scores."
    )
    capabilities: ClassVar[frozenset[Capability]] = frozenset(
        {
            Capability.WORD_VECTORS,
            Capability.CONTEXTUAL,
            Capability.MASKED_LM,
            Capability.CAUSAL_LM,
            Capability.GENERATION,
        }
    )
    libraries: ClassVar[tuple[str, ...]] = ("torch", "transformers")

    # ------------------------------------------------------------------ language-model scores

    @property
    def uncased(self) -> bool:
        """Whether the model's tokenizer lowercases its input: pair metrics then lowercase sentences
        first, as CrowS-Pairs does for uncased models."""
        return lm_scoring.is_uncased(self.loaded.tokenizer)

    def tokenize(self, texts: Sequence[str]) -> list[Tokens]:
        """Ids with the special tokens the model expects, the character range of each token
        (whitespace a byte-level or SentencePiece token carries before its word is left out; (0, 0)
        for special tokens), and special-token flags. Texts longer than the model's limit are cut to
        it (keeping the special tokens) with one warning per call, as in `encode`."""
        loaded = self.loaded
        texts = list(texts)
        vectors.check_texts(texts)
        return vectors.tokens(loaded, texts)

    @property
    def mask_token(self) -> str | None:
        return getattr(self.loaded.tokenizer, "mask_token", None)

    def decode(self, ids: Sequence[int]) -> str:
        """The tokenizer's own decoding, with its defaults (special tokens kept)."""
        with loading.quiet_transformers():
            return self.loaded.tokenizer.decode(list(ids))

    def masked_log_probs(self, requests: Sequence[MaskedRequest]) -> list[np.ndarray]:
        loaded = self._need_head("masked", "masked-LM probabilities")
        rows, tokens, _ = self._batch_limits()
        with compute.matmul_precision(self.dtype, loaded.device):
            return lm_scoring.masked_log_probs(
                loaded.model, loaded.tokenizer, loaded.device, requests, rows, max_tokens=tokens
            )

    def token_log_probs(
        self, sequences: Sequence[Sequence[int]], *, attention: bool = False, start: bool = True
    ) -> list[TokenScores]:
        loaded = self._need_head(None, "token log-probabilities")
        rows, tokens, _ = self._batch_limits()
        with compute.matmul_precision(self.dtype, loaded.device):
            return lm_scoring.token_log_probs(
                loaded.model,
                loaded.tokenizer,
                loaded.device,
                sequences,
                rows,
                causal=loaded.head == "causal",
                attention=attention,
                start=start,
                max_tokens=tokens,
            )

    def choice_log_probs(self, requests: Sequence[ChoiceRequest]) -> list[ChoiceScores]:
        """Each question's prompt read once, its answers after it in the same row (see
        `bias.api.hf.choice_scoring`); the same numbers as one sequence per answer."""
        loaded = self._need_head("causal", "answer log-likelihoods")
        requests, how = self._in_template(requests)
        rows, tokens, _ = self._batch_limits()
        with compute.matmul_precision(self.dtype, loaded.device):
            found = choice_scoring.packed_choice_log_probs(
                loaded.model,
                loaded.tokenizer,
                self,
                loaded.device,
                requests,
                rows,
                max_tokens=tokens,
            )
        found = found if found is not None else super().choice_log_probs(requests)
        return [attrs.evolve(f, context=f"{f.context}; {how}") for f in found] if how else found

    def _in_template(self, requests: Sequence[ChoiceRequest]) -> tuple[list[ChoiceRequest], str]:
        """With chat = true, each prompt as the user's turn in the chat template, so the answers are
        scored inside the assistant's turn (and how, for the result); else the requests as given."""
        if self.chat != "true" or not chat_template.uses_template(
            self.loaded.tokenizer, self.chat, self.spec
        ):
            return list(requests), ""
        out, how = [], ""
        for r in requests:
            text, how = chat_template.templated(
                self.loaded.tokenizer, GenerationRequest.of(r.prompt, self.system or None)
            )
            out.append(
                attrs.evolve(r, prompt=chat_template.strip_start(self.loaded.tokenizer, text)[0])
            )
        return (
            out,
            f"each prompt put as the user's turn through {how}, the answers scored inside the "
            "assistant's turn",
        )

    def generate(
        self, requests: Sequence[GenerationRequest], sampling: Sampling | None = None
    ) -> list[Generations]:
        """Replies written by the model (see `bias.api.hf.generation`), in its chat template when it
        has one (chat = auto or true), sample j drawn with seed + j. batch_size = auto writes 32
        replies at a time on any device: the token budget of scoring does not count the growing
        key-value cache of generation."""
        loaded = self._need_head("causal", "generated replies")
        asked = [
            (GenerationRequest.of(r) if isinstance(r, str) else r).with_system(self.system or None)
            for r in requests
        ]
        template = chat_template.uses_template(loaded.tokenizer, self.chat, self.spec)
        resolved = (sampling or Sampling()).over(Sampling())
        rows = batching.CPU_BATCH if self.batch_size == "auto" else int(self.batch_size)
        with compute.matmul_precision(self.dtype, loaded.device):
            return generation.generate(loaded, asked, resolved, template, rows)

    # ------------------------------------------------------------------ encoding

    def encode(
        self,
        texts: Sequence[str],
        spans: Sequence[tuple[int, int] | None] | None = None,
        *,
        pooling: str = "mean",
        layer: int | str | None = None,
    ) -> np.ndarray:
        """One float64 row per text: the whole text (span None) or the character span [start, end).

        Whole text: "cls" is the first token's vector (encoders only); "mean" averages every token
        the attention mask keeps, special tokens included (the sent-bias convention); "first"/"last"
        take the text's own first/last sub-token, so "last" is the last real token, the sentence
        vector of a causal LM. Span: the sub-tokens whose characters overlap the span, special
        tokens excluded, pooled by mean/first/last; "cls" still takes the [CLS] vector (of the
        sentence that contains the span). Special tokens always stay in the model's input. `layer`
        None is the embedder's own setting. A text longer than the model's limit is cut to a window
        of tokens that keeps the span (and the special tokens), with one warning per call.
        """
        loaded = self.loaded
        if pooling not in POOLINGS:
            raise BiasError(f"pooling must be one of {', '.join(POOLINGS)}, not {pooling!r}.")
        layer = self.layer if layer is None else vectors.layer_value(layer)
        vectors.check_layer(layer, loaded.num_states)
        texts = list(texts)
        spans = vectors.checked_spans(texts, spans)
        vectors.check_pooling(loaded, pooling, self.spec)
        rows, empty = self._rows(texts, spans, pooling, layer)
        if empty:
            i = empty[0]
            what = f"The span {spans[i]} of the text" if spans[i] is not None else "The text"
            raise BiasError(
                f"{what} {texts[i]!r} covers no token of the model (empty, or only spaces).",
                "Check the text and the span's character offsets.",
            )
        return rows

    def word_vectors(self, words: Sequence[str]) -> WordVectors:
        """Word encodings: each word alone between the tokenizer's special tokens, its sub-tokens
        pooled.

        A word with at least one known piece gets a vector; a word the model sees only as unknown
        tokens ([UNK]: every such word would share one vector) is lost, as are words that tokenise
        to nothing (empty or blank strings).
        """
        loaded = self.loaded
        unique = list(dict.fromkeys(words))
        candidates = [w for w in unique if isinstance(w, str) and w.strip()]
        unknown = vectors.only_unknown(loaded.tokenizer, candidates)
        candidates = [w for w in candidates if w not in unknown]
        spans: list[tuple[int, int] | None] = [(0, len(w)) for w in candidates]
        pooling = self.resolved_word_pooling
        vectors.check_pooling(loaded, pooling, self.spec)
        rows, empty = self._rows(candidates, spans, pooling, self.layer)
        dropped = set(empty)
        kept = [w for i, w in enumerate(candidates) if i not in dropped]
        found = set(kept)
        lost = tuple(w for w in unique if w not in found)
        return WordVectors(
            tuple(kept),
            rows[[i for i in range(len(candidates)) if i not in dropped]],
            lost=lost,
            approximated=(),
        )

    def _rows(
        self,
        texts: Sequence[str],
        spans: Sequence[tuple[int, int] | None],
        pooling: str,
        layer: int | str,
    ) -> tuple[np.ndarray, list[int]]:
        start, _ = self._start_token()
        return vectors.cached_rows(
            self.loaded, self._cache, texts, spans, pooling, layer, self._run, start=start
        )

    def _run(self, items: Sequence[PooledInput], layer: int | str) -> np.ndarray:
        rows, tokens, _ = self._batch_limits()
        with compute.matmul_precision(self.dtype, self.loaded.device):
            return vectors.pooled_rows(
                self.loaded, items, layer, rows, self._hidden_states, max_tokens=tokens
            )

    def _hidden_states(self, inputs: dict[str, Any], layer: int | str) -> Any:
        return vectors.hidden_states(self.loaded, inputs, layer)
