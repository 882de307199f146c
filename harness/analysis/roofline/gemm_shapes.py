"""The GEMM shapes the roofline probe runs: squares, a real model's projections, awkward ones.

Standard library only. A shape is C[M,N] = A[M,K] @ B[K,N], the layout of a linear layer
y = x @ W.T: M is the number of tokens, N the layer's output features, K its input features.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

KINDS = ("square", "prefill", "decode", "awkward", "reference", "user")

# meta-llama/Meta-Llama-3-8B config.json: hidden_size 4096, intermediate_size 14336,
# num_attention_heads 32, num_key_value_heads 8, head_dim = 4096 / 32 = 128.
LLAMA3_8B: dict[str, int | str] = {
    "name": "Llama-3-8B",
    "hidden": 4096,
    "intermediate": 14336,
    "heads": 32,
    "kv_heads": 8,
    "head_dim": 128,
}

PREFILL_TOKENS_RANGE = (2048, 8192)
DECODE_TOKENS_RANGE = (1, 64)
DEFAULT_PREFILL_TOKENS = (2048, 8192)
DEFAULT_DECODE_TOKENS = (1, 64)
SQUARE_SIZES = (256, 512, 1024, 2048, 4096, 8192, 16384)
# 4097 breaks every power-of-two tile and 16-byte row alignment; 1000 is aligned but pads tiles.
AWKWARD = ((4097, 4097, 4097), (1000, 1000, 1000))
# The fixed shapes a dtype's "burst best" is taken over: the same shapes and conditions every run and in
# every dtype, so the figure repeats (issue 30). On a GPU the three shapes mamf-finder reported its best
# GEMMs at on the H200 (bench/RESULTS.md, "Roofline probe vs mamf-finder"); on a CPU the largest square
# its path runs.
REFERENCE_DIMS = {"cuda": ((4096, 4096, 8192), (4096, 8192, 8192), (8192, 8192, 8192)), "cpu": ((1024, 1024, 1024),)}


@dataclass(frozen=True)
class Shape:
    """One GEMM to classify and time."""

    label: str
    kind: str
    m: int
    n: int
    k: int
    source: str

    def as_dict(self) -> dict[str, object]:
        return {"label": self.label, "kind": self.kind, "m": self.m, "n": self.n, "k": self.k, "source": self.source}


def projections(config: dict[str, int | str] = LLAMA3_8B) -> list[tuple[str, int, int, str]]:
    """(name, N, K, derivation) for the four projection GEMMs of one decoder layer."""
    hidden, inter = int(config["hidden"]), int(config["intermediate"])
    heads, kv, hd = int(config["heads"]), int(config["kv_heads"]), int(config["head_dim"])
    qkv = heads * hd + 2 * kv * hd
    name = config["name"]
    return [
        ("qkv", qkv, hidden, f"{name} fused QKV: N = {heads}x{hd} + 2x{kv}x{hd} = {qkv}, K = hidden {hidden}"),
        ("o", hidden, heads * hd, f"{name} attention output: N = hidden {hidden}, K = {heads}x{hd}"),
        ("gate_up", 2 * inter, hidden, f"{name} fused gate+up: N = 2x{inter} = {2 * inter}, K = hidden {hidden}"),
        ("down", hidden, inter, f"{name} MLP down: N = hidden {hidden}, K = intermediate {inter}"),
    ]


def default_shapes(
    max_square: int,
    prefill_tokens: tuple[int, ...] = DEFAULT_PREFILL_TOKENS,
    decode_tokens: tuple[int, ...] = DEFAULT_DECODE_TOKENS,
) -> list[Shape]:
    """Squares up to max_square, Llama-3-8B projections at prefill and decode M, awkward shapes."""
    shapes = [Shape(f"square-{s}", "square", s, s, s, "square sweep") for s in SQUARE_SIZES if s <= max_square]
    for name, n, k, why in projections():
        for phase, tokens in (("prefill", prefill_tokens), ("decode", decode_tokens)):
            shapes += [Shape(f"{name}-{phase}-{m}", phase, m, n, k, f"{why}; M = {m} {phase} tokens") for m in tokens]
    shapes += [
        Shape(
            f"awkward-{m}" if m == n == k else f"awkward-{m}x{n}x{k}",
            "awkward",
            m,
            n,
            k,
            "deliberately awkward for tensor-core tiling",
        )
        for m, n, k in AWKWARD
    ]
    return shapes


def reference_shapes(device: str) -> list[Shape]:
    """The burst best's fixed shapes on DEVICE ("cuda" or "cpu")."""
    return [
        Shape(f"ref-{m}x{n}x{k}", "reference", m, n, k, "fixed burst-best shape (the same every run and dtype)")
        for m, n, k in REFERENCE_DIMS[device]
    ]


def with_reference(shapes: list[Shape], device: str) -> list[Shape]:
    """SHAPES and, after them, each reference shape whose dimensions none of them has already."""
    have = {(s.m, s.n, s.k) for s in shapes}
    return shapes + [r for r in reference_shapes(device) if (r.m, r.n, r.k) not in have]


def is_reference(m: object, n: object, k: object, device: str) -> bool:
    """Whether (m, n, k), as a document states them (any values), is one of the device's fixed shapes."""
    return (m, n, k) in REFERENCE_DIMS.get(device, ())


_SHAPE = re.compile(r"^\s*(\d+)\s*[xX]\s*(\d+)\s*[xX]\s*(\d+)\s*(?::\s*(\S+))?\s*$")


def parse_shape(text: str, source: str = "command line") -> Shape:
    """'MxNxK' or 'MxNxK:label' -> a user Shape; ValueError with the reason otherwise."""
    match = _SHAPE.match(text)
    if not match:
        raise ValueError(f"shape {text!r} is not MxNxK or MxNxK:label (e.g. 4096x4096x8192)")
    m, n, k = (int(g) for g in match.groups()[:3])
    if min(m, n, k) < 1:
        raise ValueError(f"shape {text!r} has a zero dimension")
    label = match.group(4) or f"user-{m}x{n}x{k}"
    return Shape(label, "user", m, n, k, source)


def read_shapes_file(path: Path) -> list[Shape]:
    """One shape per line ('MxNxK' or 'MxNxK:label'); blank lines and '#' comments ignored."""
    shapes = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        text = line.split("#", 1)[0].strip()
        if text:
            try:
                shapes.append(parse_shape(text, source=f"{path.name} line {number}"))
            except ValueError as exc:
                raise ValueError(f"{path}:{number}: {exc}") from None
    return shapes


def check_tokens(values: tuple[int, ...], allowed: tuple[int, int], phase: str) -> None:
    """Prefill and decode token counts must stay in the ranges that make them prefill/decode."""
    low, high = allowed
    bad = [v for v in values if not low <= v <= high]
    if bad:
        raise ValueError(f"{phase} tokens must lie in {low}..{high}, got {bad}")


def unique_labels(shapes: list[Shape]) -> list[Shape]:
    """Shapes in order, a repeated label refused: labels key the classification."""
    seen: set[str] = set()
    for shape in shapes:
        if shape.label in seen:
            raise ValueError(f"shape label {shape.label!r} appears twice")
        seen.add(shape.label)
    return shapes
