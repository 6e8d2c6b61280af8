"""Reduced copies of a model for hosts the full model does not fit, and extrapolation back. No torch.

A reduced copy is the same ``ModelSpec`` with fewer layers (every distinct kind of layer is kept at
least once, so a Gemma-2 copy still has a sliding and a full layer, a DeepSeek copy a dense and an
MoE layer), optionally fewer routed experts per MoE layer and a smaller vocabulary. Everything the
run measures per layer (weight bytes, KV bytes) is then scaled back to the full model:

    full = sum over groups g of identical layers:  measured bytes of g's layers in the copy x n_g / m_g

with n_g the layers of group g in the full model and m_g in the copy; expert and router tensors
scale by E / E', vocabulary tables by V / V'. The scaling is exact (integer) because every layer of
a group has the same shapes. These figures are labelled "extrapolated" wherever they are shown.
"""

from fractions import Fraction

from pydantic import BaseModel, ConfigDict

from kvplan.errors import PlanInputError
from kvplan.spec import DecoderLayer, Experts, Linear, ModelSpec
from kvplan.units import counted


class Reduction(BaseModel):
    """How the copy that ran differs from the model asked for. ``reduced`` is False for the full model."""

    model_config = ConfigDict(frozen=True)
    reduced: bool
    layers_full: int
    layers_run: int
    layer_index: tuple[int, ...]  # original index of each layer of the copy
    group_of_layer: tuple[int, ...]  # for each layer of the full model: its group (identical layers)
    experts_full: int = 0
    experts_run: int = 0
    vocab_full: int
    vocab_run: int
    reasons: tuple[str, ...] = ()

    def group_counts(self) -> tuple[dict[int, int], dict[int, int]]:
        """(layers per group in the full model, layers per group in the copy)."""
        full: dict[int, int] = {}
        for g in self.group_of_layer:
            full[g] = full.get(g, 0) + 1
        run: dict[int, int] = {}
        for i in self.layer_index:
            g = self.group_of_layer[i]
            run[g] = run.get(g, 0) + 1
        return full, run

    def describe(self) -> str:
        if not self.reduced:
            return "full model"
        parts = [f"{self.layers_run} of {self.layers_full} layers"]
        if self.experts_run != self.experts_full:
            parts.append(f"{self.experts_run} of {self.experts_full} routed experts per MoE layer")
        if self.vocab_run != self.vocab_full:
            parts.append(f"vocabulary {self.vocab_run:,} of {self.vocab_full:,}")
        return "reduced copy: " + ", ".join(parts)


def layer_groups(spec: ModelSpec) -> tuple[int, ...]:
    """Group id per layer; identical layers (same weights shapes and cache) share a group."""
    ids: dict[DecoderLayer, int] = {}
    return tuple(ids.setdefault(layer, len(ids)) for layer in spec.layers)


def min_layers(spec: ModelSpec) -> int:
    """The fewest layers a copy can have: one of each distinct layer."""
    return len(set(layer_groups(spec)))


def pick_layers(spec: ModelSpec, count: int) -> tuple[int, ...]:
    """``count`` layer indices, in order: the first of each group, then the earliest others."""
    groups = layer_groups(spec)
    chosen: dict[int, int] = {}
    for i, g in enumerate(groups):
        chosen.setdefault(g, i)
    picked = set(chosen.values())
    for i in range(len(groups)):
        if len(picked) >= count:
            break
        picked.add(i)
    return tuple(sorted(picked))


def _shrink_experts(layer: DecoderLayer, experts: int) -> DecoderLayer:
    ex = layer.experts
    if ex is None or ex.num_experts <= experts:
        return layer
    new_ex = Experts(num_experts=experts, num_experts_per_tok=min(ex.num_experts_per_tok, experts), linears=ex.linears)
    router = tuple(c.model_copy(update={"out_features": experts})
                   if isinstance(c, Linear) and c.out_features == ex.num_experts
                   else c for c in layer.router)
    return layer.model_copy(update={"experts": new_ex, "router": router})


def _shrink_vocab(comps, vocab_full: int, vocab: int):
    return tuple(c.model_copy(update={"out_features": vocab}) if isinstance(c, Linear) and c.out_features == vocab_full
                 else c for c in comps)


def max_experts(spec: ModelSpec) -> int:
    return max((layer.experts.num_experts for layer in spec.layers if layer.experts is not None), default=0)


def reduce_spec(spec: ModelSpec, layers: int | None = None, experts: int | None = None,
                vocab: int | None = None, reasons: tuple[str, ...] = ()) -> tuple[ModelSpec, Reduction]:
    """A copy of ``spec`` with ``layers`` layers, at most ``experts`` routed experts and ``vocab`` rows.

    None keeps that dimension whole. Asking for fewer layers than distinct kinds keeps one of each.
    """
    n = spec.num_hidden_layers
    groups = layer_groups(spec)
    e_full = max_experts(spec)
    if layers is not None and layers < 1:
        raise PlanInputError("layers", f"must be >= 1, got {layers}")
    if experts is not None and experts < 1:
        raise PlanInputError("experts", f"must be >= 1, got {experts}")
    if vocab is not None and vocab < 1:
        raise PlanInputError("vocab", f"must be >= 1, got {vocab}")
    notes = list(reasons)
    count = n if layers is None else min(n, layers)
    if count < min_layers(spec):
        notes.append(f"{counted(count, 'layer')} asked; kept {min_layers(spec)}, one of each distinct layer")
        count = min_layers(spec)
    index = pick_layers(spec, count)
    e_run = min(e_full, experts) if experts is not None and e_full else e_full
    v_run = min(spec.vocab_size, vocab) if vocab is not None else spec.vocab_size
    new_layers = tuple(_shrink_experts(spec.layers[i], e_run) for i in index)
    update = {"layers": new_layers, "num_hidden_layers": len(index)}
    if v_run != spec.vocab_size:
        update.update(vocab_size=v_run, embeddings=_shrink_vocab(spec.embeddings, spec.vocab_size, v_run),
                      lm_head=_shrink_vocab(spec.lm_head, spec.vocab_size, v_run))
    reduced = len(index) != n or e_run != e_full or v_run != spec.vocab_size
    run_spec = spec.model_copy(update=update) if reduced else spec
    return run_spec, Reduction(
        reduced=reduced, layers_full=n, layers_run=len(index), layer_index=index, group_of_layer=groups,
        experts_full=e_full, experts_run=e_run, vocab_full=spec.vocab_size, vocab_run=v_run, reasons=tuple(notes))


def extrapolate_layers(red: Reduction, per_layer: list[int]) -> int:
    """Full-model total of a per-layer quantity measured on each layer of the copy."""
    assert len(per_layer) == red.layers_run
    full, run = red.group_counts()
    total = Fraction(0)
    for j, value in enumerate(per_layer):
        g = red.group_of_layer[red.layer_index[j]]
        total += Fraction(value * full[g], run[g])
    assert total.denominator == 1, "layers of one group measured differently"
    return int(total)


def scale(value: int, full: int, run: int) -> int:
    """value x full / run, exact (a tensor whose one dimension was cut from ``full`` to ``run``)."""
    out = Fraction(value * full, run)
    assert out.denominator == 1
    return int(out)
