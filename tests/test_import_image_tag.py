"""A vllm/vllm-openai image tag on a pasted command picks the vLLM profile whose releases hold it."""

from kvplan.engines import VLLM_PROFILES
from kvplan.vllm_args import parse_vllm_command


def test_v1_image_tags_select_their_release_line():
    # kvplan.engines.VLLM_PROFILES: "0.27" covers 0.27.0 - 0.27.1, "0.21" 0.20.1 - 0.21.0, "0.33" 0.32.0 onwards
    for tag, key in (("v0.27.1", "0.27"), ("v0.20.1", "0.20.1"), ("v0.21.0", "0.21"), ("v0.33.0", "0.33"), ("v0.10.1.1", "0.10")):
        args = parse_vllm_command(f"docker run --gpus all vllm/vllm-openai:{tag} --model Qwen/Qwen3-8B -tp 2")
        assert args.vllm_version == key, (tag, args.vllm_version)
        assert any(f"profile {key} ({VLLM_PROFILES[key].releases})" in n for n in args.notes)


def test_an_old_v1_tag_says_its_engine_was_not_read_and_latest_picks_nothing():
    args = parse_vllm_command("docker run vllm/vllm-openai:v0.8.5 --model Qwen/Qwen3-8B")  # V1 by default from 0.8
    assert args.vllm_version == "0.10" and any("V1 engine before 0.10 was not read" in n for n in args.notes)
    assert parse_vllm_command("docker run vllm/vllm-openai:latest --model Qwen/Qwen3-8B").vllm_version is None
    assert parse_vllm_command("docker run vllm/vllm-openai:v0.7.3 --model Qwen/Qwen3-8B").vllm_version == "0.7"  # V0
