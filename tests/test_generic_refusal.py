"""A family neither kvplan nor transformers knows: a generic plan only when nothing would be dropped.

The generic Llama-style decoder reads the standard fields. A config that also carries fields that size
weights or cache in ways it cannot represent (experts, latent ranks, indexers, per-layer block configs,
hybrid patterns) is refused with one message naming the model_type, the architectures entry and those
fields; a generic plan, when it is made, says so in the spec, in every plan and in the CLI's JSON.
"""

import json
from pathlib import Path

import pytest

from kvplan import parse_config, preset_config
from kvplan.errors import ConfigError
from kvplan.gpus import get_gpu
from kvplan.plan import plan

FIXTURES = Path(__file__).parent / "fixtures" / "configs"


def _fabricated(cfg: dict) -> dict:
    """The same fields under a model_type and an architecture nobody knows."""
    return dict(cfg, model_type="acme_decoder", architectures=["AcmeForCausalLM"])


def test_glm5_under_a_fabricated_model_type_is_refused_naming_what_a_generic_plan_drops():
    # GLM-5 (real config): MLA latents, DSA indexer fields and 256 routed experts. A generic plan of it
    # was 27,422,275,584 parameters against transformers' 743,911,199,232: refused instead.
    with pytest.raises(ConfigError) as err:
        parse_config(_fabricated(preset_config("glm-5")))
    msg = str(err.value)
    assert err.value.field == "model_type"
    assert "'acme_decoder'" in msg and "AcmeForCausalLM" in msg and "Refused rather than guessed" in msg
    for field in ("kv_lora_rank", "n_routed_experts", "index_topk"):
        assert field in msg, field


@pytest.mark.parametrize("extra, named", [
    ({"num_local_experts": 8, "num_experts_per_tok": 2}, "num_local_experts"),  # MoE (Mixtral-style)
    ({"n_routed_experts": 64, "moe_intermediate_size": 1408}, "moe_intermediate_size"),
    ({"kv_lora_rank": 512, "qk_rope_head_dim": 64}, "kv_lora_rank"),  # MLA
    ({"index_topk": 2048, "index_head_dim": 128}, "index_head_dim"),  # DSA indexer
    ({"hybrid_override_pattern": "M-M*"}, "hybrid_override_pattern"),  # Mamba hybrid
    ({"layers_block_type": ["mamba", "attention"]}, "layers_block_type"),
    ({"block_configs": [{"attention": {"n_heads_in_group": 8}, "ffn": {"ffn_mult": 2.5}}]}, "block_configs"),
    ({"global_head_dim": 512}, "global_head_dim"),  # per-kind head sizes (Gemma-4-style)
    ({"linear_num_value_heads": 32}, "linear_num_value_heads"),  # gated DeltaNet
    ({"mamba_d_state": 16}, "mamba_d_state"),
])
def test_a_fabricated_family_with_fields_a_generic_decoder_ignores_is_refused(extra, named):
    base = _fabricated(preset_config("llama-3.2-1b"))
    with pytest.raises(ConfigError) as err:
        parse_config({**base, **extra})
    assert named in str(err.value) and "acme_decoder" in str(err.value)


def test_nemotron_nas_block_configs_are_refused_with_the_reason():
    # DeciLM / Llama-Nemotron "nemotron-nas" needs remote code in transformers and sizes every layer from
    # its own block_configs entry (heads per group, FFN multiplier, skipped attention): a uniform plan
    # would be wrong, so kvplan refuses it naming block_configs.
    cfg = dict(preset_config("llama-3.1-70b"), model_type="nemotron-nas", architectures=["DeciLMForCausalLM"],
               block_configs=[{"attention": {"n_heads_in_group": 8, "no_op": False}, "ffn": {"ffn_mult": 1.3}}] * 80)
    with pytest.raises(ConfigError) as err:
        parse_config(cfg)
    assert "nemotron-nas" in str(err.value) and "DeciLMForCausalLM" in str(err.value)
    assert "block_configs" in str(err.value)


def test_a_plain_unknown_decoder_is_planned_generic_and_says_so_everywhere():
    cfg = _fabricated(preset_config("llama-3.2-1b"))
    spec = parse_config(cfg)
    assert spec.basis == "generic"
    assert "not exact" in spec.basis_note and spec.basis_note in spec.warnings
    p = plan(spec, get_gpu("H100-SXM"))
    assert p.basis == "generic" and spec.basis_note in p.warnings


def test_a_native_preset_is_native_with_no_generic_warning():
    spec = parse_config(preset_config("llama-3.1-8b"))
    assert spec.basis == "native" and not any("generic" in w for w in spec.warnings)
    assert plan(spec, get_gpu("H100-SXM")).basis == "native"


def test_cli_plan_json_carries_basis_and_warnings(tmp_path, capsys):
    # kvplan.cli.main in-process (``python -m kvplan`` is that call: kvplan/__main__.py): a subprocess imported torch
    # and transformers afresh for the unknown model_type, ~5 s a run on the CI host
    from kvplan.cli import main

    path = tmp_path / "config.json"
    path.write_text(json.dumps(_fabricated(preset_config("llama-3.2-1b"))))
    assert main(["plan", str(path), "--gpu", "H100-SXM", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["basis"] == "generic"
    assert any("generic Llama-style decoder" in w for w in payload["warnings"])
    refused = tmp_path / "glm.json"
    refused.write_text(json.dumps(_fabricated(preset_config("glm-5"))))
    assert main(["plan", str(refused), "--gpu", "H100-SXM", "--json"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: model_type:") and "Traceback" not in err
