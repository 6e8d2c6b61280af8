"""DeepSeek-V4's vLLM KV layout (kvplan/vllm_dsv4.py) against hand-derived numbers and one public start-up error.

V4-Flash (tests/fixtures/configs/deepseek-v4-flash.json): 43 layers, compress_ratios[:43] = 2 x 0 (SWA only), then
4 / 128 alternating: 21 CSA, 20 HCA. --block-size 256, --kv-cache-dtype fp8 (fp8_ds_mla on FlashMLA, 576 B pages):
  MLA group: CSA KV 64 x 584 = 37,376 -> 37,440; CSA indexer 64 x 132 = 8,448 -> 8,640; HCA KV 2 x 584 = 1,168 ->
             1,728; page 21 x 37,440 + 21 x 8,640 + 20 x 1,728 = 1,002,240 B
  sliding:   43 SWA caches 64 x 584 -> 37,440 (window 128, block 64); C4 states 4 x 2048 x 4 = 32,768 -> 32,832 and
             4 x 512 x 4 = 8,192 -> 8,640 (window 8, block 4); C128 states 8 x 1024 x 4 = 32,768 -> 32,832 (window
             128, block 8)
  T = _approximate_gcd([21, 43, 21, 20], >= 21) = 22 -> SWA split 22 + 21; before 0.27 the 32,832 B state pages are
  padded to 37,440 (the nearest MLA page above).

Source for the start-up error: vllm-project/vllm#44376 (simonwalo, 2026-06-03, vLLM 0.22): DeepSeek-V4-Flash on 2 x
GH200, LLM(tensor_parallel_size=2, max_model_len=30_000, kv_cache_dtype="fp8", block_size=256, ...) raised "To serve at
least one request with the model's max seq len (30000), (6.66 GiB KV cache is needed, which is larger than the
available KV cache memory (5.44 GiB). Based on the available memory, the estimated maximum model length is 13528."
The LLM class on a >= 70 GiB GPU batches 16,384 tokens by default (engine/arg_utils.py), passed here explicitly.
"""

from kvplan import vllm_dsv4
from kvplan.gpus import get_gpu
from kvplan.plan import _dsv4_needed_bytes
from kvplan.units import GiB, cdiv
from tests.test_engine_logs_2026c import B200_DSV4, _fixture
from tests.test_engine_logs_dec import _plan


def _v4(version: str, command: str = B200_DSV4):
    return _plan(_fixture("deepseek-v4-flash"), get_gpu("B200"), command, version)


def test_dsv4_groups_and_block_at_0_25():
    p = _v4("0.25")
    g = [(x.kind, x.layers, x.page_bytes, x.block_size, x.window) for x in p.kv_groups]
    assert g == [("mla", 62, 1_002_240, None, None),
                 ("sliding_attention", 22, 22 * 37_440, 64, 128), ("sliding_attention", 21, 21 * 37_440, 64, 128),
                 ("sliding_attention", 42, 21 * (37_440 + 8_640), 4, 8), ("sliding_attention", 20, 20 * 37_440, 8, 128)]
    # 0.23 - 0.26 _get_kv_cache_config_packed: 22 x 37,440 + 21 x 8,640 + 20 x 1,728 = 1,039,680 B a block
    assert p.block_size == 256 and p.ranks[0].bytes_per_block == 1_039_680
    # get_max_concurrency_for_kv_cache_config (0.20 - 0.26) at 1,048,576 tokens, 8,192 batched:
    # MLA 4096 x 1,002,240 + SWA 131 x (823,680 + 786,240) [cdiv(127 + 8192, 64) + 1] + C4 2051 x 967,680
    # [cdiv(7 + 8192, 4) + 1] + C128 1041 x 748,800 [cdiv(127 + 8192, 8) + 1] = 7,080,287,040; / 1,002,240 -> 7065
    assert p.blocks_per_request == cdiv(4096 * 1_002_240 + 131 * 1_609_920 + 2051 * 967_680 + 1041 * 748_800,
                                        1_002_240) == 7065
    assert p.max_concurrency == p.num_blocks / 7065


def test_dsv4_release_rules():
    # 0.22 _get_kv_cache_config_deepseek_v4: (37,440 + 8,640 + 1,728) x 22 tuples = 1,051,776 B a block
    assert _v4("0.22").ranks[0].bytes_per_block == 47_808 * 22 == 1_051_776
    # 0.27: no sliding-page padding; the packed stride is the largest group page (the MLA group's 1,002,240 B) and a
    # request takes the sum of its groups' pages; from 0.26 a window holds max_in_flight_tokens = 2 x 8192 more:
    # 4096 + 2 x (cdiv(127 + 16,384, 64) + 1) + (cdiv(7 + 16,384, 4) + 1) + (cdiv(127 + 16,384, 8) + 1)
    # = 4096 + 2 x 259 + 4099 + 2065 = 10,778
    p = _v4("0.27")
    assert p.ranks[0].bytes_per_block == 1_002_240 and p.blocks_per_request == 10_778
    assert [x.page_bytes for x in p.kv_groups][3:] == [21 * (32_832 + 8_640), 20 * 32_832]


def test_dsv4_memory_check_reproduces_vllm_44376():
    cmd = ("vllm serve deepseek-ai/DeepSeek-V4-Flash --tensor-parallel-size 2 --enable-expert-parallel "
           "--max-model-len 30000 --gpu-memory-utilization 0.95 --kv-cache-dtype fp8 --block-size 256 "
           "--max-num-batched-tokens 16384")
    p = _plan(_fixture("deepseek-v4-flash"), get_gpu("H200"), cmd, "0.22")
    need = lambda L: _dsv4_needed_bytes(p.kv_groups, L, p.block_size, 16_384)
    # 22 x 47,808 x (118 + 2 x 259 + 4099 + 2065) = 7,152,076,800 B -> "6.66 GiB KV cache is needed"
    assert need(30_000) == 1_051_776 * 6800 == 7_152_076_800 and f"{need(30_000) / GiB:.2f}" == "6.66"
    # below 16,391 tokens every window holds L: 53 + 2 x (212 + 1) + (3382 + 1) + (1691 + 1) = 5554 pages at 13,528;
    # 13,529 crosses a C4 and a C128 block edge (3383, 1692): 5556. The estimate 13528 needs a pool in
    # [5,841,563,904, 5,843,667,456) B, inside the log's "5.44 GiB" (5.435 - 5.445)
    lo, hi = need(13_528), need(13_529)
    assert (lo, hi) == (1_051_776 * 5554, 1_051_776 * 5556)
    assert 5.435 * GiB <= lo < hi <= 5.445 * GiB


def test_dsv4_h20_tp2_vllm_51041_from_the_logged_pool():
    # vllm-project/vllm#51041 (2026-08): DeepSeek-V4-Flash-0731 on H20 TP2, "KV cache holds only 150K tokens in 7.7 GiB",
    # max_model_len 121,344, ~1.24x. Planned as 0.26 (the release the thread's logs run) with the API server's 8,192
    # batched tokens (H20 >= 70 GiB): from 0.26 a window holds max_in_flight_tokens = 2 x 8192 more, so a request is
    # cdiv(474 x 1,002,240 + 259 x (823,680 + 786,240) + 4099 x 967,680 + 2065 x 748,800, 1,002,240)
    # = cdiv(6,404,823,360, 1,002,240) = 6391 blocks. The logged pool, 7.7 GiB (7.65 - 7.75), holds 7900 - 8004 blocks
    # of 1,039,680 B: 1.236x - 1.252x, 150.0K - 151.9K tokens (floor(7.7 GiB / 1,039,680) = 7952: 1.24x, 150,982).
    # kvplan's own pool here is off: the 0731 checkpoint's MXFP4 experts (config.json expert_dtype "fp4", not read)
    # are priced as FP8, so it plans 133 GiB of weights a rank and "Does not load".
    cmd = ("vllm serve deepseek-ai/DeepSeek-V4-Flash-0731 --trust-remote-code --tensor-parallel-size 2 "
           "--enable-expert-parallel --kv-cache-dtype fp8 --block-size 256 --max-model-len 121344")
    p = _plan(_fixture("deepseek-v4-flash"), get_gpu("H20"), cmd, "0.26")
    assert p.ranks[0].bytes_per_block == 1_039_680
    assert p.blocks_per_request == cdiv(474 * 1_002_240 + 259 * 1_609_920 + 4099 * 967_680 + 2065 * 748_800,
                                        1_002_240) == 6391
    blocks = int(7.7 * GiB) // 1_039_680
    assert blocks == 7952 and f"{blocks / 6391:.2f}" == "1.24" and int(blocks / 6391 * 121_344) == 150_982
    lo, hi = int(7.65 * GiB) // 1_039_680 / 6391, int(7.75 * GiB) // 1_039_680 / 6391
    assert 1.23 < lo < hi < 1.26 and 149_000 < lo * 121_344 < hi * 121_344 < 153_000


def test_dsv4_default_block_and_refused_blocks():
    # no --block-size: layer 0's DeepseekV4SWACache backend prefers 256 (sparse_swa.py get_preferred_block_size)
    assert _v4("0.25", "vllm serve x --tensor-parallel-size 8 --kv-cache-dtype fp8").block_size == 256
    # --block-size 128 at 0.25: the 64-token SWA page (37,440 B) exceeds the CSA page (32 x 584 -> 19,008 B), which
    # _get_kv_cache_groups_uniform_groups asserts against; 0.27 dropped that assert
    warned = lambda v: any("would not start" in w for w in _v4(v, B200_DSV4 + " --block-size 128").warnings)
    assert warned("0.25") and not warned("0.27")
    # --kv-cache-dtype auto: the FlashMLA DSV4 path asserts fp8
    assert any("only supports fp8 kv-cache" in w for w in _v4("0.25", "vllm serve x -tp 8").warnings)


def test_dsv4_layout_exact_for_0_31_to_0_33():
    # Profile "0.30" = 0.30.0 - 0.31.0, "0.32" = 0.32.0, "0.33" = 0.33.0 - 0.33.x.
    # Their wheels register the 0.29 - 0.30 specs for
    # DeepseekV4ForCausalLM (the configurable SWA block / alignment is DeepSeek-V4.1's only), so the numbers are the
    # 0.27+ ones worked in the module docstring: one block = the largest group page, the MLA group's
    # 21 x 37,440 + 21 x 8,640 + 20 x 1,728 = 1,002,240 B; sliding groups 22 / 21 x 37,440 (SWA), 21 x (32,832 +
    # 8,640) (C4 states), 20 x 32,832 (C128 states); a 1,048,576-token request at 8,192 batched (16,384 in flight):
    # 4096 + 2 x (cdiv(127 + 16,384, 64) + 1) + (cdiv(7 + 16,384, 4) + 1) + (cdiv(127 + 16,384, 8) + 1) = 10,778 blocks
    for version in ("0.30", "0.33"):
        p = _v4(version)
        assert [x.page_bytes for x in p.kv_groups] == [1_002_240, 22 * 37_440, 21 * 37_440, 21 * (32_832 + 8_640),
                                                       20 * 32_832], version
        assert p.ranks[0].bytes_per_block == 1_002_240 and p.blocks_per_request == 4096 + 2 * 259 + 4099 + 2065 == 10_778
        assert not any("approximation" in w and "0.32+" in w for w in p.warnings)  # no release-approximation left
        assert any("exact for 0.20 - 0.33" in w for w in p.warnings)


def test_dsv4_auto_kv_dtype_is_fp8_from_0_30():
    # 0.30.0+ _resolve_dsv4_kv_cache_dtype: --kv-cache-dtype auto -> fp8 (fp8_ds_mla) on the default attention, so
    # auto plans the 1,002,240 B fp8 block above and warns nothing; 0.29 asserts fp8, so auto is a 16-bit plan with
    # the warning. 16-bit pages (512 B alignment): MLA 21 x 64 x 1024 (65,536) + 21 x 64 x 132 (8,448 -> 8,704)
    # + 20 x 2 x 1024 (2,048) = 1,600,000 B a block.
    auto = B200_DSV4.replace(" --kv-cache-dtype fp8", "")
    p = _v4("0.33", auto)
    assert p.ranks[0].bytes_per_block == 1_002_240 and not any("fp8_ds_mla" in w for w in p.warnings)
    old = _v4("0.29", auto)
    assert old.ranks[0].bytes_per_block == 21 * 65_536 + 21 * 8_704 + 20 * 2_048 == 1_600_000
    assert vllm_dsv4.AUTO_KV_NOTE in old.warnings
    bf16 = _v4("0.33", B200_DSV4.replace("--kv-cache-dtype fp8", "--kv-cache-dtype bfloat16"))
    assert bf16.ranks[0].bytes_per_block == 1_600_000 and vllm_dsv4.AUTO_KV_NOTE_030 in bf16.warnings
