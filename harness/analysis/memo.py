"""A document's headlines computed once while one bundle is checked. Standard library only.

Checking a bundle asks for the same document's headlines several times: verify recomputes them,
its discrepancies recompute them again, the tables and the report render them, acceptance and the
fleet metrics read them. Inside `remembering()` (one `dossier verify`; one node of `dossier fleet
collect`, 1,000 of which must fit in 40 s on two cores), a function decorated with `per_document` computes once per document
object and hands the same result to every caller, as BundleView.figures already does for the
report. Outside it, nothing is remembered: a probe that builds a document and asks as it goes
always gets a fresh answer. The document is held with its result, so its id is never reused for
another document while the scope lasts; the scope's end frees both.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Callable, Iterator
from typing import Any

_MEMO: contextvars.ContextVar[dict[tuple[str, int], tuple[Any, Any]] | None] = contextvars.ContextVar(
    "harness_analysis_memo", default=None
)


@contextlib.contextmanager
def remembering() -> Iterator[None]:
    """While inside, `per_document` functions compute once per document. A scope opened inside
    another joins it (`dossier verify`'s inside a fleet node's: acceptance then reads what verify
    computed)."""
    if _MEMO.get() is not None:
        yield
        return
    token = _MEMO.set({})
    try:
        yield
    finally:
        _MEMO.reset(token)


def per_document(function: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """FUNCTION(document), remembered for the document object inside `remembering()`. Its callers
    read the result and never change it (as they read BundleView.figures)."""
    name = f"{function.__module__}.{function.__qualname__}"

    @functools.wraps(function)
    def remembered(document: Any) -> Any:
        memo = _MEMO.get()
        if memo is None:
            return function(document)
        key = (name, id(document))
        held = memo.get(key)
        if held is None or held[0] is not document:
            held = memo[key] = (document, function(document))
        return held[1]

    return remembered
