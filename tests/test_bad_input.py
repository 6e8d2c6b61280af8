"""Bad input: one typed error naming the field; the CLI prints `error: ...` and exits 2."""

import subprocess
import sys

import pytest

from kvplan import ConfigError, KvplanError, parse_config
from kvplan.kv import kv_cache_bytes
from tests.test_seeds import SEED_MODEL


def refused(config) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_config(config)
    return info.value


def test_malformed_json_names_position():
    err = refused('{"model_type": "llama", "hidden_size": 4096,')
    assert err.field == "config" and "line 1" in err.message


@pytest.mark.parametrize("text", ["[]", "3", '"llama"', "", "null"])
def test_json_that_is_not_an_object(text):
    assert refused(text).field == "config"


def test_nan_and_infinity_literals_are_refused():
    assert "NaN" in refused('{"hidden_size": NaN}').message


def test_string_where_a_number_belongs():
    err = refused({**SEED_MODEL, "hidden_size": "4096"})
    assert err.field == "hidden_size" and "integer" in err.message


@pytest.mark.parametrize("value", [0, -8, 2.5, True, float("inf")])
def test_zero_negative_fractional_bool_inf_sizes(value):
    assert refused({**SEED_MODEL, "num_hidden_layers": value}).field == "num_hidden_layers"


def test_absurdly_large_size():
    err = refused({**SEED_MODEL, "vocab_size": 10**15})
    assert err.field == "vocab_size" and "beyond" in err.message


def test_missing_num_attention_heads_is_named():
    cfg = dict(SEED_MODEL)
    del cfg["num_attention_heads"]
    assert "num_attention_heads" in refused(cfg).field


def test_every_missing_field_is_named_at_once():
    err = refused({"model_type": "something_new", "vocab_size": 1000})
    for field in ("hidden_size", "num_hidden_layers", "num_attention_heads"):
        assert field in err.field


def test_head_dim_not_derivable():
    cfg = {**SEED_MODEL, "hidden_size": 4100}
    del cfg["head_dim"]
    err = refused(cfg)
    assert err.field == "head_dim" and "not divisible" in err.message


def test_kv_heads_must_divide_heads():
    assert refused({**SEED_MODEL, "num_key_value_heads": 5}).field == "num_key_value_heads"


def test_layer_types_length_mismatch():
    err = refused({**SEED_MODEL, "layer_types": ["full_attention"] * 3})
    assert err.field == "layer_types" and "32" in err.message


def test_unknown_model_type_with_standard_fields_plans_with_warning():
    spec = parse_config({**SEED_MODEL, "model_type": "brand_new_decoder"})
    assert spec.warnings and "brand_new_decoder" in spec.warnings[0]


def test_negative_length_is_refused():
    with pytest.raises(KvplanError) as info:
        kv_cache_bytes(parse_config(SEED_MODEL), [5, -1])
    assert info.value.field == "lengths"


def test_errors_are_value_errors_with_field_in_text():
    err = refused({**SEED_MODEL, "hidden_size": None, "head_dim": None})
    assert isinstance(err, ValueError) and str(err).startswith(err.field)


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "kvplan", *args], capture_output=True, text=True)


def test_cli_bad_config_file_exits_2_without_traceback(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text('{"model_type": "llama", "hidden_size": "big"}')
    out = run_cli("params", str(bad))
    assert out.returncode == 2
    assert out.stderr.startswith("error: hidden_size:")
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize("args", [
    ("kv", "llama-3.1-8b", "--batch", "0"),
    ("kv", "llama-3.1-8b", "--tokens", "-5"),
    ("kv", "llama-3.1-8b", "--kv-dtype", "int3"),
    ("kv", "no-such-model"),
    ("kv", "llama-3.1-8b", "--lengths", "5,x"),
    ("params", "llama-3.1-8b", "--weight-format", "fp7"),
])
def test_cli_bad_flags_exit_2(args):
    out = run_cli(*args)
    assert out.returncode == 2, out.stderr
    assert out.stderr.startswith("error:") and "Traceback" not in out.stderr
