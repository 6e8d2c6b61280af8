"""A model argument the OS cannot stat (a name past NAME_MAX, a NUL byte) is a refused name, not a crash."""
import pytest

from kvplan.errors import ConfigError
from kvplan.presets import resolve_model


@pytest.mark.parametrize("arg", ["x" * 300, "x" * 300 + ".json", "a\x00b", "a\x00b.json"])
def test_unstatable_model_names_are_refused_naming_the_field(arg):
    # "x" * 300 is past Linux's NAME_MAX of 255: Path.is_file() raises OSError(ENAMETOOLONG) there, and a NUL byte
    # raises ValueError; both used to escape as "error: internal: OSError"
    with pytest.raises(ConfigError) as info:
        resolve_model(arg)
    assert info.value.field == "model"
    if arg.endswith(".json"):  # named as a file: refused as one, the echoed name cut to 200 characters
        assert info.value.message.startswith("no such file: ") and len(info.value.message) <= 14 + 200
    else:  # no file: looked up as a preset name
        assert "no preset named" in info.value.message
