"""The fast module-name matching of kvplan.quantization._Entries (glob buckets by literal prefix,
per-layer candidate patterns, per-component plain hits, parent modules precomputed) gives the same
first entry as the straightforward search it replaced (written out here as the reference: every
dotted run of every path against the plain names, every pattern against every path), on random
lists mixing plain names, layer-indexed names, parents, per-expert names, globs and regexes."""

import random

import pytest

from kvplan.quantization import _Entries, _glob_prefix, _tails, _top_paths


def _dotted_runs(path):
    parts = path.split(".")
    return [".".join(parts[i:j]) for i in range(len(parts)) for j in range(i + 1, len(parts) + 1)]


def _ref_plain(e, path):
    hits = [e.plain[p] for p in _dotted_runs(path) if p in e.plain]
    return min(hits) if hits else None


def _ref_patterns(e, paths):
    for index, p in e.patterns:
        rx = _glob_prefix(p) if isinstance(p, str) else p
        if any(rx.match(path) for path in paths):
            return index
    return None


def ref_first_layer(e, layer, category, name, expert=None, patterns=True):
    tails = list(_tails(category, name, expert))
    hits = []
    if layer in e.layers_named:
        for root in e.roots:
            head = f"{root}layers.{layer}"
            if head in e.index:
                hits.append(e.index[head])
            for tail in tails:
                parts = tail.split(".")
                for k in range(1, len(parts) + 1):
                    key = head + "." + ".".join(parts[:k])
                    if key in e.index:
                        hits.append(e.index[key])
    if e.plain:
        hits += [i for i in (_ref_plain(e, f"layers.{layer}.{t}") for t in tails) if i is not None]
    if hits:
        return min(hits)
    if patterns and e.patterns:
        full = [f"{root}.layers.{layer}.{t}" for root in e.pattern_roots for t in tails]
        if category == "experts" and expert is None:
            full += [f"{root}.layers.{layer}.{t}" for root in e.pattern_roots for t in _tails(category, name, "0")]
        return _ref_patterns(e, full)
    return None


def ref_first_top(e, category, name):
    paths = _top_paths(category, name)
    hits = [e.index[p] for p in paths if p in e.index]
    if e.plain:
        hits += [i for i in (_ref_plain(e, p) for p in paths) if i is not None]
    if hits:
        return min(hits)
    return _ref_patterns(e, paths) if e.patterns else None


PLAIN = ["lm_head", "self_attn", "o_proj", "0", "3", "layers", "mlp.gate", "3.down_proj", "experts", "q_proj",
         "norm", "embed_tokens", "mlp.experts.2", "self_attn.k_proj", "w1", "input_layernorm", "model"]
LAYERED = ["model.layers.{i}", "model.layers.{i}.self_attn", "model.layers.{i}.self_attn.q_proj", "layers.{i}",
           "model.layers.{i}.mlp", "model.layers.{i}.mlp.experts.{e}.down_proj", "model.layers.{i}.mlp.experts.{e}",
           "model.language_model.layers.{i}.self_attn", "layers.{i}.mlp.gate_proj", "model.layers.{i}.mlp.gate",
           "model.layers.{i}.block_sparse_moe.experts.{e}.w1", "model.layers.{i}.input_layernorm"]
GLOBS = ["*", "model.layers.1*", "*.self_attn.*", "model.layers.[12].mlp*", "*experts.1?.*", "*mlp.gate",
         "model.language_model.layers.{i}.*", "transformer.*", "model.layers.{i}.self_attn*", "[m]odel.layers.2.*",
         "model.embed*", "lm_he?d", "model.layers.{i}.mlp.experts.*", "*.{i}.*", "model.layers.?", "model.l*s.{i}.mlp*",
         "model.layers.{i}.mlp.experts.{e}.*", "*down_proj", "model.layers.{i}[", "model.layers.{i}"]
REGEXES = [r"re:.*lm_head", r"re:model\.layers\.(1|4)\..*", r"re:.*\.v_proj$", r"re:.*experts\.2\..*",
           r"re:model\.layers\.{i}\.mlp", r"re:.*\.layers\.\d\.self_attn.*", "re:model"]
COMPONENTS = [("attention", "q_proj"), ("attention", "k_proj"), ("attention", "v_proj"), ("attention", "o_proj"),
              ("mlp", "gate_proj"), ("mlp", "down_proj"), ("router", "gate"), ("norms", "input_layernorm"),
              ("experts", "gate_proj"), ("experts", "down_proj"), ("experts", "up_proj"), ("other", "x")]
TOPS = [("embeddings", "embed_tokens"), ("lm_head", "lm_head"), ("norms", "norm"), ("other", "embed_vision")]


def _random_entries(rng):
    out = []
    for _ in range(rng.randint(1, 14)):
        pool = rng.choice((PLAIN, LAYERED, GLOBS, REGEXES))
        out.append(rng.choice(pool).replace("{i}", str(rng.randint(0, 12))).replace("{e}", str(rng.randint(0, 20))))
    return out


@pytest.mark.parametrize("seed", range(3))
def test_fast_matching_equals_reference(seed):
    rng = random.Random(seed)
    checked = 0
    for _ in range(40):
        entries = _random_entries(rng)
        e = _Entries(entries, "quantization_config.ignore")
        for layer in (0, 1, 2, 4, 12, 13):
            for category, name in COMPONENTS:
                for expert in ((None, "2", "17") if category == "experts" else (None,)):
                    for patterns in (True, False):
                        got = e.first_layer(layer, category, name, expert, patterns)
                        assert got == ref_first_layer(e, layer, category, name, expert, patterns), \
                            (entries, layer, category, name, expert, patterns)
                        checked += got is not None
        for category, name in TOPS:
            assert e.first_top(category, name) == ref_first_top(e, category, name), (entries, category, name)
    assert checked > 500  # the lists do name components: the comparison is not all None == None
