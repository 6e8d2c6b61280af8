"""Exact parameter counts, by component, total and active per token.

The count is the number of learned tensor elements transformers creates for the model
(``sum(p.numel() for p in model.parameters())``, tied embeddings once); the tests assert
equality with transformers itself for every preset.
"""

from pydantic import BaseModel, ConfigDict

from kvplan.spec import CATEGORIES, ModelSpec, spec_distinct_layers, walk


class ParamBreakdown(BaseModel):
    """total_params: all weights. active_params: what one token touches (MoE: top-k experts).

    Worked number: Llama-3.1-8B has 8,030,261,248 parameters, all active.
    """

    model_config = ConfigDict(frozen=True)
    total_params: int
    active_params: int
    components: dict[str, int]
    num_experts: int = 0
    num_experts_per_tok: int = 0
    # Vision / audio towers (ModelSpec.towers): outside total_params, which is the language model's.
    tower_params: int = 0
    # Multi-token-prediction layers (ModelSpec.mtp_layers + mtp_other): loaded for MTP speculative decoding only.
    mtp_params: int = 0


def count_params(spec: ModelSpec) -> ParamBreakdown:
    """Sum of every component's elements; active = total - (E - k) x params per expert, per MoE layer."""
    return spec.memo("params", lambda: _count(spec))


def _count(spec: ModelSpec) -> ParamBreakdown:
    components = dict.fromkeys(CATEGORIES, 0)
    for category, comp, copies in walk(spec):
        components[category] += comp.numel * copies
    total = sum(components.values())
    inactive = 0
    experts = None
    for layer, n in spec_distinct_layers(spec):
        if layer.experts is not None:
            experts = layer.experts
            inactive += n * (experts.num_experts - experts.num_experts_per_tok) * experts.numel_per_expert
    return ParamBreakdown(
        total_params=total,
        active_params=total - inactive,
        components=components,
        num_experts=experts.num_experts if experts else 0,
        num_experts_per_tok=experts.num_experts_per_tok if experts else 0,
        tower_params=sum(t.numel for t in spec.towers),
        mtp_params=sum(_layer_numel(layer) for layer in spec.mtp_layers) + sum(c.numel for c in spec.mtp_other),
    )


def _layer_numel(layer) -> int:
    comps = (*layer.attention, *layer.mlp, *layer.router, *layer.norms, *layer.other)
    return sum(c.numel for c in comps) + (layer.experts.numel if layer.experts is not None else 0)
