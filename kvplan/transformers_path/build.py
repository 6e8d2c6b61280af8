"""Build a ``ModelSpec`` with transformers: the meta-device model gives every weight, a depth-reduced
copy run on the CPU gives every layer's cache (``measure.py``). See the package docstring.
"""

import contextlib
import logging
import os
import re
import time
import warnings
from collections.abc import Callable, Mapping
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never the network: configs are built locally
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402
import transformers  # noqa: E402
from pydantic import ValidationError  # noqa: E402
from transformers import AutoConfig, AutoModelForCausalLM  # noqa: E402

from kvplan.errors import ConfigError  # noqa: E402
from kvplan.spec import DecoderLayer, Experts, Linear, ModelSpec, Norm, Tensor  # noqa: E402

MAX_LAYERS = 1024  # far past any real decoder (DeepSeek-V3: 61, Llama-3.1-405B: 126); bounds the meta build's time
TIME_BUDGET_S = 90.0  # a build past this is refused (the largest 2026 config takes ~10 s on 2 cores)
NOTE = ("built with transformers {version}: parameters exact, cache measured on a copy of {n} layer{s}")

# Config keys never passed to the config class: they are not architecture (and auto_map names remote code).
_DROP = ("quantization_config", "auto_map", "model_type", "transformers_version", "_commit_hash")

# base_model_tp_plan values (transformers 5.23 ``integrations/tensor_parallel.py``) -> kvplan shard.
_TP_KINDS = {
    "colwise": "column", "packed_colwise": "column", "colwise_gather_output": "column", "embedding_colwise": "column",
    "rowwise": "row", "rowwise_split_input": "row", "packed_rowwise": "row", "embedding_rowwise": "row",
    "grouped_gemm": "expert", "ep_dispatch_experts": "expert", "moe_tp_experts": "expert",
    "moe_identity_expert": "expert",
}
# Module names vLLM shards the same way when a config class has no plan (vLLM's model files).
_COLUMN_NAMES = {"q_proj", "k_proj", "v_proj", "qkv_proj", "gate_proj", "up_proj", "gate_up_proj", "c_attn", "c_fc",
                 "query_key_value", "dense_h_to_4h", "fc1", "fc_in", "w1", "w3", "in_proj", "q_b_proj", "kv_b_proj",
                 "query", "key", "value", "Wqkv", "wqkv", "c_q", "c_k", "c_v", "up", "gate"}
_ROW_NAMES = {"o_proj", "down_proj", "c_proj", "dense", "dense_4h_to_h", "fc2", "fc_out", "w2", "out_proj", "wo",
              "out", "down"}
_ROUTER_NAMES = {"gate", "router", "wg", "gating", "router_gate", "moe_gate", "switch", "classifier"}
_ATTENTION_WORDS = ("attn", "attention", "mixer", "mamba", "ssm", "conv", "token_mix", "time_mix", "mlstm", "slstm",
                    "recurrent", "temporal", "linear_attn", "rwkv", "query", "key", "value", "lru")
_MLP_WORDS = ("mlp", "ffn", "feed_forward", "feedforward", "moe", "shared_expert", "channel_mix", "fc", "dense_h",
              "dense_4h", "expert")
_TOPK_KEYS = ("num_experts_per_tok", "num_experts_per_token", "moe_topk", "top_k", "experts_per_token", "moe_k",
              "num_selected_experts", "n_activated_experts", "topk", "moe_top_k", "num_activated_experts")
_EXPERT_INDEX = re.compile(r"(?:^|\.)(experts|expert)\.(\d+)(?=\.|$)")


@contextlib.contextmanager
def quiet():
    """transformers and torch warn freely while building random configs: keep it off the app's log."""
    logger = transformers.utils.logging
    before = logger.get_verbosity()
    logger.set_verbosity_error()
    root = logging.getLogger("transformers")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            yield
        finally:
            logger.set_verbosity(before)
            root.disabled = False


def config_error(exc: BaseException, fields: Mapping[str, Any], what: str) -> ConfigError:
    """A transformers exception as a ConfigError naming the config field its message mentions."""
    text = " ".join(str(exc).split())[:400] or type(exc).__name__
    named = [k for k in fields if isinstance(k, str) and len(k) > 2 and re.search(rf"\b{re.escape(k)}\b", text)]
    field = max(named, key=len) if named else "config"
    return ConfigError(field, f"transformers {transformers.__version__} {what}: {type(exc).__name__}: {text}")


def make_config(model_type: str, fields: Mapping[str, Any]):
    try:
        with quiet():
            return AutoConfig.for_model(model_type, **fields)
    except Exception as exc:  # a config class's own validation: any exception type
        raise config_error(exc, fields, "refuses this config") from None


def meta_model(hf_config, fields: Mapping[str, Any]):
    try:
        with quiet(), torch.device("meta"):
            return AutoModelForCausalLM.from_config(hf_config)
    except Exception as exc:
        raise config_error(exc, fields, "cannot build this config") from None


def text_config(hf_config):
    try:
        return hf_config.get_text_config(decoder=True)
    except Exception:
        return hf_config


def attr(cfg, *names, default=None):
    """The first of ``names`` the config object has as a plain value (attribute_map aliases included)."""
    for name in names:
        try:
            value = getattr(cfg, name)
        except Exception:
            continue
        if value is not None:
            return value
    return default


def layers_key(cfg) -> str:
    """The config's own key for the layer count (``n_layer`` for GPT-2, ``num_hidden_layers`` for most)."""
    return getattr(type(cfg), "attribute_map", {}).get("num_hidden_layers", "num_hidden_layers")


def decoder_stack(model) -> tuple[str, Any]:
    """(path, ModuleList) of the decoder layers: of the ModuleLists as long as the text config's
    ``num_hidden_layers`` (any, if none is), the one holding the most parameters."""
    n_layers = attr(text_config(model.config), "num_hidden_layers")
    lists = [(name, module) for name, module in model.named_modules()
             if isinstance(module, torch.nn.ModuleList) and len(module)]
    if any(len(m) == n_layers for _, m in lists):
        lists = [(name, m) for name, m in lists if len(m) == n_layers]
    best = ("", None, -1)
    for name, module in lists:
        n = sum(p.numel() for p in module.parameters())
        if n > best[2]:
            best = (name, module, n)
    if best[1] is None:
        raise ConfigError("model_type", "transformers built no stack of decoder layers for this config")
    return best[0], best[1]


# ----------------------------------------------------------------------------- sharding


class TPPlan:
    """``base_model_tp_plan`` patterns ("layers.*.self_attn.q_proj": "colwise") matched against module paths."""

    def __init__(self, hf_config, model):
        plans: dict[str, str] = {}
        for source in (getattr(hf_config, "base_model_tp_plan", None), getattr(text_config(hf_config),
                       "base_model_tp_plan", None), getattr(model, "_tp_plan", None)):
            if isinstance(source, Mapping):
                plans.update({k: v for k, v in source.items() if isinstance(k, str) and isinstance(v, str)})
        self.rules = [(re.compile(r"(?:^|\.)" + re.escape(k).replace(r"\*", r"[^.]+") + r"$"), v)
                      for k, v in plans.items()]
        self.used = bool(self.rules)

    def kind(self, *paths: str) -> str | None:
        for path in paths:
            for rule, value in self.rules:
                if rule.search(path):
                    return value
        return None


def shard_of(plan: TPPlan, module_path: str, param_path: str, leaf: str, linear: bool) -> str:
    value = plan.kind(module_path, param_path)
    if value is not None:
        if value in _TP_KINDS:
            return _TP_KINDS[value]
        if value.startswith("local") or "expert" in value:
            return "expert"
        return "replicated"  # replicated_with_grad_allreduce, mla_kv_a_proj, all_reduce, keep/free_full_weight
    if linear and leaf in _COLUMN_NAMES:
        return "column"
    if linear and leaf in _ROW_NAMES:
        return "row"
    return "replicated"


# ----------------------------------------------------------------------------- parameters -> components


def _is_norm(module, params: dict) -> bool:
    cls = type(module).__name__.lower()
    w = params.get("weight")
    if w is None or w.ndim != 1 or set(params) - {"weight", "bias"}:
        return False
    b = params.get("bias")
    return b is None or tuple(b.shape) == tuple(w.shape) or "norm" in cls


def _is_linear(module, params: dict) -> bool:
    w = params.get("weight")
    if w is None or w.ndim != 2 or set(params) - {"weight", "bias"}:
        return False
    b = params.get("bias")
    return b is None or (b.ndim == 1 and b.shape[0] == w.shape[0])


def _category(path: str, default: str = "other") -> str:
    low = path.lower()
    segs = low.split(".")
    if any(s in _ROUTER_NAMES or "router" in s for s in segs[-1:]) or "router" in low:
        return "router"
    if any(w in low for w in _ATTENTION_WORDS):
        return "attention"
    if any(w in low for w in _MLP_WORDS):
        return "mlp"
    return default


class Walker:
    """Turns one module's parameters into spec components (see ``layer_components``)."""

    def __init__(self, model, plan: TPPlan, hidden: int, vocab: int, n_experts: int | None, topk: int | None):
        self.model, self.plan, self.hidden, self.vocab = model, plan, hidden, vocab
        self.n_experts, self.topk = n_experts, topk
        self.modules = dict(model.named_modules())
        self.assumptions: list[str] = []

    def group(self, named: list[tuple[str, Any]]) -> dict[str, dict[str, Any]]:
        """{module path: {param name: tensor}}, in parameter order."""
        out: dict[str, dict[str, Any]] = {}
        for name, p in named:
            mod, _, leaf = name.rpartition(".")
            out.setdefault(mod, {})[leaf] = p
        return out

    def layer(self, prefix: str, named: list[tuple[str, Any]]) -> dict[str, Any]:
        """DecoderLayer fields (all but the cache) of one layer; ``named`` are full parameter names."""
        cats: dict[str, list] = {"attention": [], "mlp": [], "router": [], "norms": [], "other": []}
        stacked: dict[str, dict[str, Any]] = {}  # experts module path -> its params (3-D stacks)
        per_expert: dict[str, dict[int, dict[str, Any]]] = {}  # "mlp.experts" -> {expert: {rel: tensor}}
        for mod_path, params in self.group(named).items():
            rel = mod_path[len(prefix) + 1:] if mod_path.startswith(prefix + ".") else ""
            module = self.modules.get(mod_path)
            m = _EXPERT_INDEX.search(rel)
            if m and "shared" not in rel[:m.start()].rsplit(".", 1)[-1]:
                base = rel[:m.end()].rsplit(".", 1)[0]
                sub = rel[m.end() + 1:] or "weight"
                for leaf, p in params.items():
                    per_expert.setdefault(base, {}).setdefault(int(m.group(2)), {})[f"{sub}.{leaf}"] = p
                continue
            if any(p.ndim == 3 for p in params.values()) and not isinstance(module, torch.nn.Conv1d) and (
                    "expert" in rel.lower() or any(p.ndim == 3 and p.shape[0] == self.n_experts
                                                   for p in params.values())):
                stacked.setdefault(rel, {}).update(params)
                continue
            for category, comp in self.components(mod_path, rel, module, params):
                cats[category].append(comp)
        experts = self.experts(stacked, per_expert, cats)
        fields = {k: tuple(v) for k, v in cats.items()}
        fields["experts"] = experts
        return fields

    def components(self, mod_path: str, rel: str, module, params: dict) -> list[tuple[str, Any]]:
        leaf = rel.rsplit(".", 1)[-1] if rel else mod_path.rsplit(".", 1)[-1]
        if module is not None and _is_norm(module, params):
            return [("norms", Norm(name=leaf or "norm", dim=params["weight"].shape[0], bias="bias" in params))]
        if module is not None and isinstance(module, torch.nn.Embedding) and "weight" in params:
            w = params["weight"]
            return [("other", Linear(name=leaf, in_features=w.shape[1], out_features=w.shape[0],
                                     shard="replicated", quantizable=False))]
        if module is not None and _is_linear(module, params):
            w = params["weight"]
            category = _category(rel)
            if category == "router" or (leaf in _ROUTER_NAMES and self.n_experts and w.shape[0] == self.n_experts):
                return [("router", Linear(name=leaf, in_features=w.shape[1], out_features=w.shape[0],
                                          bias="bias" in params, shard="replicated", quantizable=False))]
            shard = shard_of(self.plan, mod_path, mod_path + ".weight", leaf, True)
            return [(category, Linear(name=leaf, in_features=w.shape[1], out_features=w.shape[0],
                                      bias="bias" in params, shard=shard))]
        out = []
        for name, p in params.items():
            path = f"{rel}.{name}" if rel else name
            category = _category(path)
            shard = shard_of(self.plan, mod_path, f"{mod_path}.{name}", name, False)
            out.append((category, Tensor(name=path, numel=p.numel(), shard="column" if shard == "column" else
                                         "replicated")))
        return out

    def expert_linear(self, name: str, p, bias) -> Linear:
        """One expert's [out, in] from a stacked [E, a, b] tensor: down projections end at hidden."""
        _, a, b = p.shape
        down = "down" in name or name in ("w2", "wo", "fc2")
        if down:
            out_f, in_f = (a, b) if a == self.hidden or b != self.hidden else (b, a)
        else:
            out_f, in_f = (a, b) if b == self.hidden or a != self.hidden else (b, a)
        return Linear(name=name, in_features=in_f, out_features=out_f, bias=bias is not None, shard="expert")

    def experts(self, stacked, per_expert, cats) -> Experts | None:
        groups: list[tuple[int, list[Linear]]] = []
        for rel, params in stacked.items():
            counts = [p.shape[0] for p in params.values() if p.ndim == 3]
            e = self.n_experts if self.n_experts in counts else (counts[0] if counts else None)
            linears = []
            for name, p in params.items():
                if p.ndim != 3:
                    continue
                bias = params.get(f"{name}_bias", params.get(name.replace("weight", "bias")) if "weight" in name
                                  else None)
                lin = self.expert_linear(name, p, bias)
                if p.shape[0] == e:
                    linears.append(lin)
                else:  # a stack of another length in the same block (LongCat-Flash's gate_up holds zero experts)
                    cats["mlp"].append(lin.model_copy(update={"count": p.shape[0]}))
            folded = {f"{n}_bias" for n in params} | {n.replace("weight", "bias") for n in params if "weight" in n}
            for name, p in params.items():  # anything left (per-expert scales, biases not folded)
                if p.ndim != 3 and name not in folded:
                    cats["other"].append(Tensor(name=f"{rel}.{name}", numel=p.numel(), shard="expert"))
            if e:
                groups.append((e, linears))
        for base, experts in per_expert.items():
            first = experts[min(experts)]
            linears = []
            subs: dict[str, dict[str, Any]] = {}
            for key, p in first.items():
                sub, _, leaf = key.rpartition(".")
                subs.setdefault(sub, {})[leaf] = p
            same = all(sorted((k, tuple(v.shape)) for k, v in ex.items()) ==
                       sorted((k, tuple(v.shape)) for k, v in first.items()) for ex in experts.values())
            if not same:  # experts of different shapes: keep them as plain components
                for ex in experts.values():
                    for key, p in ex.items():
                        cats["mlp"].append(Tensor(name=f"{base}.{key}", numel=p.numel(), shard="expert"))
                continue
            for sub, params in subs.items():
                w = params.get("weight")
                if w is not None and w.ndim == 2 and set(params) <= {"weight", "bias"}:
                    linears.append(Linear(name=sub.rsplit(".", 1)[-1], in_features=w.shape[1], out_features=w.shape[0],
                                          bias="bias" in params, shard="expert"))
                else:
                    for leaf, p in params.items():
                        for _ in experts:
                            cats["other"].append(Tensor(name=f"{base}.{sub}.{leaf}", numel=p.numel(), shard="expert"))
            groups.append((len(experts), linears))
        groups = [(e, lins) for e, lins in groups if lins]
        if not groups:
            return None
        e, linears = groups[0]
        for e2, lins in groups[1:]:  # a second expert set in one layer: same count merges, else plain copies
            if e2 == e:
                linears += lins
            else:
                cats["mlp"].extend(lin.model_copy(update={"count": e2}) for lin in lins)
        k = self.topk
        if k is None:
            k = e
            self.assumptions.append(f"num_experts_per_tok = {e} (config names no top-k: every expert counted active)")
        return Experts(num_experts=e, num_experts_per_tok=max(1, min(k, e)), linears=tuple(linears))

    def outside(self, named: list[tuple[str, Any]], lm_head_path: str | None) -> dict[str, list]:
        """Embeddings, final norms, lm_head and anything else outside the decoder stack."""
        out: dict[str, list] = {"embeddings": [], "final_norm": [], "lm_head": [], "other": []}
        for mod_path, params in self.group(named).items():
            module = self.modules.get(mod_path)
            leaf = mod_path.rsplit(".", 1)[-1] or "weight"
            w = params.get("weight")
            if mod_path == lm_head_path and w is not None and w.ndim == 2:
                out["lm_head"].append(Linear(name="lm_head", in_features=w.shape[1], out_features=w.shape[0],
                                             bias="bias" in params, shard="vocab", quantizable=False))
                continue
            if isinstance(module, torch.nn.Embedding) and w is not None:
                vocab = w.shape[0] >= self.vocab
                comp = Linear(name=leaf, in_features=w.shape[1], out_features=w.shape[0],
                              shard="vocab" if vocab else "replicated", quantizable=False)
                out["embeddings"].append(comp)
                for name, p in params.items():
                    if name != "weight":
                        out["other"].append(Tensor(name=f"{mod_path}.{name}", numel=p.numel()))
                continue
            if module is not None and _is_norm(module, params):
                out["final_norm"].append(Norm(name=leaf, dim=w.shape[0], bias="bias" in params))
                continue
            for category, comp in self.components(mod_path, "", module, params):
                out["other"].append(comp)
        return out


MAX_LAYER_EXPERTS = 250_000  # layers x experts; Kimi-K2.5: 61 x 384 = 23,424. Bounds the meta build's module count


def _check_module_count(tc, n_layers) -> None:
    """Refuse, before building, a config whose experts x layers would take the meta build minutes
    (families that keep one module per expert build E x L modules)."""
    if not isinstance(n_layers, int):
        return
    for key, value in sorted(vars(tc).items()):
        low = key.lower()
        if ("expert" in low and not any(w in low for w in ("per_tok", "top", "shared", "size", "dim", "layer",
                                                                "freq", "step", "offset", "period"))
                and isinstance(value, int) and not isinstance(value, bool) and value * n_layers > MAX_LAYER_EXPERTS):
            raise ConfigError(key, f"{value:,} experts x {n_layers} layers is beyond any real model (the "
                                   f"transformers path builds at most {MAX_LAYER_EXPERTS:,} layer-experts)")


# ----------------------------------------------------------------------------- the build


def fields_of(cfg: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in cfg.items() if k not in _DROP}


def build(config: Mapping[str, Any], cfg: Mapping[str, Any], model_type: str, skipped: tuple[str, ...],
          progress: Callable[[float, str], None] | None = None) -> ModelSpec:
    """See ``kvplan.transformers_path.build_spec`` (which caches this)."""
    from kvplan.hf_config import Reader, _dtype_and_quant, default_model_name, quantized_name_without_config
    from kvplan.transformers_path import measure

    started = time.monotonic()
    report = progress or (lambda fraction, message: None)
    fields = fields_of(cfg)
    report(0.02, f"reading the {model_type} config with transformers {transformers.__version__}")
    hf = make_config(model_type, fields)
    tc = text_config(hf)
    n_layers = attr(tc, "num_hidden_layers")
    if isinstance(n_layers, int) and n_layers > MAX_LAYERS:
        raise ConfigError(layers_key(tc), f"{n_layers} layers is beyond any real model (the transformers path "
                                          f"builds at most {MAX_LAYERS})")
    _check_module_count(tc, n_layers)
    report(0.05, "building the model on the meta device")
    model = meta_model(hf, fields)
    measure.check_time(started, TIME_BUDGET_S, "the meta build")
    stack_path, stack = decoder_stack(model)
    hidden = attr(tc, "hidden_size", "d_model", "n_embd", "dim")
    vocab = attr(tc, "vocab_size")
    embed = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    if not isinstance(vocab, int) and embed is not None:
        vocab = embed.weight.shape[0]
    if not isinstance(hidden, int) and embed is not None:
        hidden = embed.weight.shape[1]
    n_experts = attr(tc, "n_routed_experts", "num_local_experts", "num_experts", "moe_num_experts", "n_experts")
    topk = attr(tc, *_TOPK_KEYS)
    n_experts = n_experts if isinstance(n_experts, int) and not isinstance(n_experts, bool) else None
    topk = topk if isinstance(topk, int) and not isinstance(topk, bool) and topk > 0 else None

    report(0.15, f"mapping the parameters of {len(stack)} layers")
    plan = TPPlan(hf, model)
    walker = Walker(model, plan, hidden, vocab or 1, n_experts, topk)
    per_layer: list[list] = [[] for _ in stack]
    outside: list = []
    total = 0
    for name, p in model.named_parameters():  # dedups tied / shared weights, as transformers counts
        total += p.numel()
        if stack_path and name.startswith(stack_path + "."):
            idx = name[len(stack_path) + 1:].split(".", 1)[0]
            if idx.isdigit():
                per_layer[int(idx)].append((name, p))
                continue
        outside.append((name, p))
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    head_path = next((n for n, m in model.named_modules() if m is head), None) if head is not None else None
    layer_fields = [walker.layer(f"{stack_path}.{i}", named) for i, named in enumerate(per_layer)]
    rest = walker.outside(outside, head_path)

    report(0.3, "measuring the cache on a depth-reduced copy")
    reader = Reader(cfg, prefix="text_config." if cfg is not config else "")
    dq = _dtype_and_quant(reader)
    try:
        caches, n_copy, notes = measure.measure(model_type, hf, model, stack_path, started, TIME_BUDGET_S, report,
                                                model_fp32=dq["dtype"] == "fp32")
    except measure.Unmeasurable as exc:
        raise ConfigError("model_type", f"transformers builds {model_type!r}, but {exc}: kvplan cannot plan its "
                                        "cache") from None
    canon: dict = {}
    layers = []
    for fields_i, cache in zip(layer_fields, caches):
        layer = DecoderLayer(cache=cache, **fields_i)
        layers.append(canon.setdefault(layer, layer))
    del model

    nq = attr(tc, "num_attention_heads", "n_head", "num_heads")
    assumptions = list(walker.assumptions)
    if not isinstance(nq, int) or nq < 1:
        nq = 1
        assumptions.append("num_attention_heads = 1 (the config names no attention heads: a recurrent model)")
    nkv = attr(tc, "num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num")
    if not isinstance(nkv, int) or nkv < 1 or nq % nkv:
        nkv = nq
    head_dim = attr(tc, "head_dim", "kv_channels")
    if not isinstance(head_dim, int) or head_dim < 1:
        head_dim = max(1, (hidden or nq) // nq)
    max_pos = attr(tc, "max_position_embeddings", "n_positions", "max_sequence_length", "seq_length")
    note = NOTE.format(version=transformers.__version__, n=n_copy, s="" if n_copy == 1 else "s")
    unread = quantized_name_without_config(default_model_name(config), dq)  # as parse_config warns (hf_config)
    if not plan.used:
        assumptions.append("tensor-parallel shards from module names (the config class has no base_model_tp_plan)")
    try:
        spec = ModelSpec(
            name=default_model_name(config), model_type=model_type, vocab_size=vocab, hidden_size=hidden,
            num_hidden_layers=len(layers), num_attention_heads=nq, num_key_value_heads=nkv, head_dim=head_dim,
            max_position_embeddings=max_pos if isinstance(max_pos, int) and max_pos > 0 else None,
            tie_word_embeddings=bool(attr(tc, "tie_word_embeddings", default=False)) and not rest["lm_head"],
            embeddings=tuple(rest["embeddings"]), layers=tuple(layers), final_norm=tuple(rest["final_norm"]),
            lm_head=tuple(rest["lm_head"]), other=tuple(rest["other"]), basis="transformers", basis_note=note,
            assumptions=tuple(reader.assumptions + assumptions),
            warnings=(note,) + tuple(notes) + ((unread,) if unread else ()),
            skipped=tuple(skipped), **dq)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ConfigError(str(err["loc"][-1]) if err["loc"] else "config", err["msg"]) from None
    from kvplan.params import count_params

    ours = count_params(spec).total_params
    assert ours == total, f"transformers path: {ours} parameters mapped of {total}"
    report(1.0, "done")
    return spec
