"""The files of the fitted models in the knowledge directory (the text model's, the shape model's): reading one, and
the `answer` section both carry - when the model may answer for the rules, and with what confidence."""

from __future__ import annotations

import json
import math
from pathlib import Path

from bot.diagnosis.calibration import Curve
from bot.errors import KnowledgeBaseError


def read_model_file(path: Path) -> dict | None:
    """The JSON object in `path`; None when the file does not exist.

    Raises:
        KnowledgeBaseError: the file is unreadable, not JSON, or not an object.
    """
    if not path.exists():
        return None
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise KnowledgeBaseError(str(path), "(file)", f"unreadable: {exc}") from exc
    if not isinstance(raw, dict):
        raise KnowledgeBaseError(str(path), "(file)", "must be a JSON object")
    return raw


def answer_section(where: str, raw: object, name: str = "answer") -> tuple[float, Curve]:
    """A fitted model's `answer` section (the text model's, the shape model's): from what probability of its
    likeliest class the model answers for the rules, and the confidence curve of that answer. The shape model's
    `doubt` section has the same form (`name`).

    Raises:
        KnowledgeBaseError: naming the field that is malformed.
    """
    if not isinstance(raw, dict):
        raise KnowledgeBaseError(where, name, "must be an object with min_probability and curve")
    minimum = raw.get("min_probability")
    if type(minimum) not in (int, float) or not 0.0 < minimum <= 1.0:
        raise KnowledgeBaseError(where, f"{name}.min_probability", "must be a probability above 0")
    points = raw.get("curve")
    if not isinstance(points, list) or not points or not all(finite_numbers(p, 2) for p in points):
        raise KnowledgeBaseError(where, f"{name}.curve", "must be a non-empty list of [probability, confidence]")
    pairs = tuple((float(x), float(y)) for x, y in points)
    if any(not (0.0 <= v <= 1.0) for pair in pairs for v in pair) or any(
        x1 < x0 or y1 < y0 for (x0, y0), (x1, y1) in zip(pairs, pairs[1:], strict=False)
    ):
        raise KnowledgeBaseError(where, f"{name}.curve", "points within [0, 1], rising in both values")
    return float(minimum), Curve(pairs)


def finite_numbers(value: object, length: int) -> bool:
    """A list of `length` finite numbers (never a bool or a string). One sum checks finiteness: a nan or an infinity
    anywhere makes it non-finite (thousands of rows are checked at every start-up)."""
    if type(value) is not list or len(value) != length:
        return False
    return all(type(x) is float or type(x) is int for x in value) and math.isfinite(sum(value))
