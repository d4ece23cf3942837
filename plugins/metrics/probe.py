"""A linear probe on frozen sentence encodings: how much task information a model's vectors carry.

Debiasing removes directions from a model's vectors; the question a user publishes beside "bias down
by X" is what else went with them. The Dutch word-embedding study (Chavez Mulsa & Spanakis 2020)
answers it with a sentiment classifier before and after Sent-Debias, reported as accuracy with a 95%
interval and F1. This metric does the cheap, deterministic version of that: every text of a labelled
set is encoded once (sentence level, the run's pooling and layer, batched by the embedder), and a
logistic regression (scikit-learn) is trained on the encodings of a seeded, stratified training part
and scored on the rest. `bias compare` then pairs the per-item predictions of two runs (McNemar).
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs
import numpy as np

from bias.api import ValueKind
from bias.api import (
    OK,
    REFUSED,
    BiasError,
    Capability,
    Embedder,
    Metric,
    Result,
    int_at_least,
    normal_interval,
    one_of,
    param,
    wilson_interval,
)
from bias.api.data import LABELLED_TEXTS, LabelledTexts, is_layer, layer_value

POOLINGS = ("cls", "mean", "first", "last")
MODES = ("probe", "finetune")
AUTO_CV_BELOW = 200  # with fewer texts, folds = 0 means k-fold cross-validation
AUTO_FOLDS = 5


def _check_layer(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if is_layer(value):
        return
    raise BiasError(
        f"layer must be a layer number (-1 is the last), mean-last-4, or none, not {value!r}."
    )


def _check_pooling(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if value is not None and value not in POOLINGS:
        raise BiasError(
            f"probe: pooling {value!r} is not a sentence pooling; use one of "
            f"{', '.join(POOLINGS)}.",
            "The probe classifies whole texts, so it takes sentence vectors.",
        )


def _check_test_size(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
        raise BiasError(
            f"probe: test_size must be a share between 0 and 1 (e.g. 0.2), not {value!r}."
        )


def _is_static(embedder: Embedder | type[Embedder]) -> bool:
    """A model, or before it is built its class (which can only say what it declares)."""
    if isinstance(embedder, Embedder):
        return embedder.static
    return Capability.VOCABULARY in embedder.capabilities


def sentence_pooling(pooling: str | None, embedder: Embedder) -> str:
    """The pooling used: the one asked for; else the mean of the word vectors for static models,
    the last token for causal LMs (the one that has seen the text) and [CLS] for encoders."""
    if pooling is not None:
        return pooling
    if _is_static(embedder):
        return "mean"
    have = embedder.available()
    return "last" if Capability.CAUSAL_LM in have and Capability.MASKED_LM not in have else "cls"


@attrs.define
class Probe(Metric):
    """Accuracy of a logistic-regression probe trained on the model's frozen sentence encodings of a
    labelled text set (kind "labelled-texts": a CSV/TSV with `text` and `label` columns).

    effect_size = accuracy on the held-out texts (0..1, higher is better; no p-value), with a 95%
    interval by the normal approximation p +- 1.96 sqrt(p(1-p)/n) (as the Dutch study) and Wilson's
    interval beside it, macro-F1, per-label precision, recall and F1, and the majority-label share
    as the chance baseline. Evaluation: one seeded, stratified train/test split (`test_size`), or
    stratified k-fold cross-validation (`folds` = k) in which every text is predicted once by a
    model that did not see it; `folds = 0` (default) takes 5-fold cross-validation for sets of fewer
    than 200 texts and the single split otherwise. figures["predictions"] holds every held-out
    text's label and prediction, which `bias compare` pairs between two runs (McNemar's test)."""

    name: ClassVar[str] = "probe"
    summary: ClassVar[str] = (
        "Accuracy of a logistic-regression probe on frozen sentence encodings of labelled "
        "texts: what debiasing costs."
    )
    value: ClassVar[ValueKind] = ValueKind(
        "accuracy", "probe accuracy on held-out texts", reference=None, signed=False, digits=3
    )
    requires: ClassVar[frozenset[Capability]] = frozenset({Capability.CONTEXTUAL})
    data_kind: ClassVar[str] = LABELLED_TEXTS

    pooling: str | None = param(
        None,
        "sentence vector: cls, mean, first or last (default cls; last for causal LMs; mean "
        "for static vectors)",
        validator=_check_pooling,
    )
    layer: str | int | None = param(
        None,
        "hidden layer: None (the model's setting), N (-1 last), or mean-last-4",
        converter=layer_value,
        validator=_check_layer,
    )
    test_size: float = param(
        0.2,
        "share of the texts held out for testing in the single split",
        validator=_check_test_size,
    )
    folds: int = param(
        0,
        "0: 5-fold cross-validation below 200 texts, else one split; 1: always one split; "
        "k >= 2: k-fold cross-validation",
        validator=int_at_least(0),
    )
    C: float = param(
        1.0, "inverse regularisation strength of the logistic regression (scikit-learn's C)"
    )
    max_iter: int = param(
        2000, "iterations of the logistic regression's solver (lbfgs)", validator=int_at_least(1)
    )
    standardize: bool = param(
        True, "scale each dimension to mean 0 and variance 1 (fitted on the training part only)"
    )
    mode: str = param(
        "probe",
        "probe (logistic regression on frozen encodings) or finetune (train the encoder "
        "and a classification head; hf models only)",
        validator=one_of(MODES),
    )
    epochs: int = param(3, "finetune: passes over the training texts", validator=int_at_least(1))
    learning_rate: float = param(5e-5, "finetune: AdamW learning rate")
    train_batch_size: int = param(
        16, "finetune: texts per training step", validator=int_at_least(1)
    )
    max_length: int = param(
        128, "finetune: truncate texts to this many tokens", validator=int_at_least(2)
    )

    def unfit(self, embedder_type: type) -> str | None:
        if _is_static(embedder_type) and self.pooling == "cls":
            return (
                "pooling 'cls' needs a [CLS] token, which static vectors have not (their "
                "sentences are the mean of the word vectors)"
            )
        return None

    def compute(
        self, embedder: Embedder, data: LabelledTexts, *, seed: int | None = None
    ) -> Result:
        if not isinstance(data, LabelledTexts):
            raise BiasError(
                f"The probe needs labelled texts (kind labelled-texts), not {type(data).__name__}."
            )
        seed = 0 if seed is None else int(seed)
        base = self.result_fields(embedder.spec, data, seed)
        texts = [item.text for item in data.items]
        labels = np.array([item.label for item in data.items], dtype=object)
        counts = data.counts()
        n = len(texts)
        smallest = min(counts.values())
        folds = self.folds
        if folds == 0:
            folds = min(AUTO_FOLDS, smallest) if n < AUTO_CV_BELOW and smallest >= 2 else 1
        if folds >= 2 and smallest < folds:
            rare = min(counts, key=counts.get)
            return Result(
                status=REFUSED,
                reason=f"label {rare!r} has {smallest} text(s), fewer than the {folds} folds "
                "asked for; "
                f"use --param folds={smallest}" + (" or more texts" if smallest < 2 else ""),
                **base,
            )
        if self.mode == "finetune":
            fit_predict = self._finetuner(embedder, texts, seed)
            pooling = "the sequence-classification head's own ([CLS] pooler for BERT-like models)"
        else:
            pooling = sentence_pooling(self.pooling, embedder)
            vectors = self._encode(embedder, texts, pooling)
            if not np.all(np.isfinite(vectors)):
                bad = int((~np.isfinite(vectors).all(axis=1)).sum())
                return Result(
                    status=REFUSED, reason=f"{bad} text(s) got a vector that is not finite", **base
                )
            fit_predict = self._regression(vectors, seed)
        try:
            predicted, fold_of, train_sizes = self._predict(fit_predict, labels, folds, seed)
        except ValueError as exc:  # scikit-learn's word for a split the data cannot give
            return Result(
                status=REFUSED, reason=f"the labels cannot be split as asked ({exc})", **base
            )
        return self._result(
            embedder, data, labels, predicted, fold_of, train_sizes, folds, pooling, seed, base
        )

    def _regression(self, vectors: np.ndarray, seed: int) -> Any:
        """fit_predict(train, test, labels) of the probe: logistic regression on the frozen
        vectors."""
        import warnings

        from sklearn.exceptions import ConvergenceWarning

        def fit_predict(train: np.ndarray, test: np.ndarray, labels: np.ndarray) -> np.ndarray:
            model = self._classifier(seed)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                model.fit(vectors[train], labels[train])
            return model.predict(vectors[test])

        return fit_predict

    def _finetuner(self, embedder: Embedder, texts: list[str], seed: int) -> Any:
        """fit_predict of mode=finetune: a fresh copy of the model's weights with a new
        classification head (transformers' AutoModelForSequenceClassification), trained for `epochs`
        with AdamW in seeded shuffled batches on the embedder's device, then asked for the held-out
        texts."""
        source = getattr(embedder, "finetune_source", None)
        if source is None:
            raise BiasError(
                "mode=finetune trains the weights of a Hugging Face model (hf:...); static "
                "and debiased models have none "
                "to train: use mode=probe (the default), which works on every model.",
                f"The model was {embedder.spec}.",
            )
        folder, device, remote = source()

        def fit_predict(train: np.ndarray, test: np.ndarray, labels: np.ndarray) -> np.ndarray:
            import torch
            import transformers

            names = sorted(set(labels[train].tolist()))
            index = {name: i for i, name in enumerate(names)}
            torch.manual_seed(seed)
            verbosity = transformers.logging.get_verbosity()
            # "some weights were newly initialised": the head, as intended
            transformers.logging.set_verbosity_error()
            bar = transformers.logging.is_progress_bar_enabled()
            transformers.logging.disable_progress_bar()
            try:
                tokenizer = transformers.AutoTokenizer.from_pretrained(
                    folder, trust_remote_code=remote
                )
                model = transformers.AutoModelForSequenceClassification.from_pretrained(
                    folder, num_labels=len(names), trust_remote_code=remote
                )
            finally:
                transformers.logging.set_verbosity(verbosity)
                if bar:
                    transformers.logging.enable_progress_bar()
            # GPT-2 style tokenizers
            if tokenizer.pad_token is None and tokenizer.eos_token is not None:
                tokenizer.pad_token = tokenizer.eos_token
            if getattr(model.config, "pad_token_id", None) is None:
                model.config.pad_token_id = tokenizer.pad_token_id
            model.to(device)

            def batch(rows: Any) -> dict[str, Any]:
                encoded = tokenizer(
                    [texts[i] for i in rows],
                    padding=True,
                    truncation=True,
                    max_length=self.max_length,
                    return_tensors="pt",
                )
                return {k: v.to(device) for k, v in encoded.items()}

            optimiser = torch.optim.AdamW(model.parameters(), lr=self.learning_rate)
            generator = torch.Generator().manual_seed(seed)
            targets = torch.tensor([index[label] for label in labels[train]], dtype=torch.long)
            model.train()
            for _ in range(self.epochs):
                order = torch.randperm(len(train), generator=generator)
                for start in range(0, len(train), self.train_batch_size):
                    picked = order[start : start + self.train_batch_size]
                    out = model(**batch(train[picked.numpy()]), labels=targets[picked].to(device))
                    optimiser.zero_grad()
                    out.loss.backward()
                    optimiser.step()
            model.eval()
            predicted = []
            with torch.inference_mode():
                for start in range(0, len(test), self.train_batch_size):
                    logits = model(**batch(test[start : start + self.train_batch_size])).logits
                    predicted.extend(names[int(i)] for i in logits.argmax(dim=-1).cpu())
            return np.array(predicted, dtype=object)

        return fit_predict

    def _encode(self, embedder: Embedder, texts: list[str], pooling: str) -> np.ndarray:
        """One call for every distinct text (the embedder batches and caches)."""
        unique = list(dict.fromkeys(texts))
        kwargs: dict[str, Any] = {"pooling": pooling}
        if self.layer is not None:
            kwargs["layer"] = self.layer
        vectors = np.asarray(embedder.encode(unique, None, **kwargs), dtype=np.float64)
        if vectors.ndim != 2 or vectors.shape[0] != len(unique):
            raise BiasError(
                f"Embedder '{embedder.name}' returned {vectors.shape} vectors for "
                f"{len(unique)} texts."
            )
        row = {t: i for i, t in enumerate(unique)}
        return vectors[[row[t] for t in texts]]

    def _classifier(self, seed: int) -> Any:
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        model = LogisticRegression(C=self.C, max_iter=self.max_iter, random_state=seed)
        return make_pipeline(StandardScaler(), model) if self.standardize else model

    def _predict(
        self, fit_predict: Any, labels: np.ndarray, folds: int, seed: int
    ) -> tuple[np.ndarray, np.ndarray, list[int]]:
        """Held-out predictions (None where a text was in the training part), the fold of each text
        (-1: training only; 0: the test part of a single split), and the training sizes."""
        from sklearn.model_selection import StratifiedKFold, train_test_split

        n = len(labels)
        predicted = np.full(n, None, dtype=object)
        fold_of = np.full(n, -1, dtype=np.int64)
        if folds >= 2:
            splits = list(
                StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed).split(
                    np.zeros(n), labels
                )
            )
        else:
            train, test = train_test_split(
                np.arange(n), test_size=self.test_size, stratify=labels, random_state=seed
            )
            splits = [(np.sort(train), np.sort(test))]
        sizes = []
        for k, (train, test) in enumerate(splits):
            predicted[test] = fit_predict(train, test, labels.astype(str))
            fold_of[test] = k
            sizes.append(int(len(train)))
        return predicted, fold_of, sizes

    def _result(
        self,
        embedder: Embedder,
        data: LabelledTexts,
        labels: np.ndarray,
        predicted: np.ndarray,
        fold_of: np.ndarray,
        train_sizes: list[int],
        folds: int,
        pooling: str,
        seed: int,
        base: dict[str, Any],
    ) -> Result:
        from sklearn.metrics import f1_score, precision_recall_fscore_support

        held = fold_of >= 0
        y, yhat = labels[held].astype(str), predicted[held].astype(str)
        n = int(held.sum())
        accuracy = float(np.mean(y == yhat))
        low, high = normal_interval(accuracy, n)
        w_low, w_high = wilson_interval(accuracy, n)
        names = data.labels()
        precision, recall, f1, support = precision_recall_fscore_support(
            y, yhat, labels=names, zero_division=0
        )
        macro_f1 = float(f1_score(y, yhat, labels=names, average="macro", zero_division=0))
        baseline = max(int(np.sum(y == label)) for label in names) / n
        confusion = {t: {p: int(np.sum((y == t) & (yhat == p))) for p in names} for t in names}
        rows = [
            {
                "index": i,
                "line": item.line,
                "label": item.label,
                "predicted": str(predicted[i]),
                "correct": bool(str(predicted[i]) == item.label),
                "fold": int(fold_of[i]),
                "text": item.text,
            }
            for i, item in enumerate(data.items)
            if fold_of[i] >= 0
        ]
        evaluation = (
            f"stratified {folds}-fold cross-validation (shuffled, seed {seed}); every text "
            "predicted once by a model that did not see it"
            if folds >= 2
            else f"one stratified train/test split, test_size {self.test_size} (seed {seed})"
        )
        info = embedder.describe() or {}
        warnings = []
        if accuracy <= baseline and n:
            warnings.append(
                f"accuracy {accuracy:.3f} is no better than always answering the most "
                f"common label ({baseline:.3f})"
            )
        return Result(
            status=OK,
            effect_size=accuracy,
            p_value=None,
            figures={
                "accuracy": accuracy,
                "ci_low": low,
                "ci_high": high,
                "ci_level": 0.95,
                "ci_method": "normal",
                "wilson_low": w_low,
                "wilson_high": w_high,
                "macro_f1": macro_f1,
                "baseline": baseline,
                "correct": int(np.sum(y == yhat)),
                "n": n,
                "labels": names,
                "per_label": {
                    name: {
                        "precision": float(p),
                        "recall": float(r),
                        "f1": float(f),
                        "support": int(s),
                    }
                    for name, p, r, f, s in zip(names, precision, recall, f1, support)
                },
                "confusion": confusion,
                "predictions": rows,
            },
            convention={
                "mode": self.mode,
                **(
                    {
                        "classifier": "the model's sequence-classification head "
                        "(transformers), a new "
                        "head on a fresh copy of "
                        "the weights for each split or fold, encoder and head trained: "
                        f"{self.epochs} epoch(s), AdamW lr "
                        f"{self.learning_rate}, batches of {self.train_batch_size} in "
                        f"seeded order, texts cut at {self.max_length} tokens",
                        "encodings": "fine-tuned (the model's served weights are not changed)",
                    }
                    if self.mode == "finetune"
                    else {
                        "classifier": "logistic regression (scikit-learn, lbfgs)"
                        + (
                            ", dimensions standardised on the training part"
                            if self.standardize
                            else ""
                        )
                        + f", C={self.C}",
                        "encodings": "frozen sentence vectors of the model (no fine-tuning)",
                    }
                ),
                "evaluation": evaluation,
                "folds": folds,
                "test_size": self.test_size if folds < 2 else None,
                "seed": seed,
                "pooling": pooling,
                "layer": "all (fine-tuned)"
                if self.mode == "finetune"
                else self.layer
                if self.layer is not None
                else info.get("layer", "none (static word vectors)"),
                "interval": "95% normal approximation p +- 1.96 sqrt(p(1-p)/n) over the held-out "
                "texts, clipped to [0, 1]; "
                "Wilson's score interval in figures",
                "f1": "macro-F1: the unweighted mean of the per-label F1",
            },
            sizes={
                "texts": len(data.items),
                "evaluated": n,
                "train": int(np.mean(train_sizes)),
                **{f"label_{k}": v for k, v in data.counts().items()},
            },
            warnings=warnings,
            **base,
        )


__all__ = ["Probe"]
