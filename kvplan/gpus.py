"""Accelerator catalog: memory the runtime exposes, peak bandwidth, dense BF16 FLOP/s.

Exposed vs marketed memory
--------------------------
A card sold as "80 GB" does not give a process 80 GiB. ECC, the driver, the CUDA/HIP context
and firmware take their share before any allocator sees it. ``memory_bytes`` is the *total*
that ``cudaMemGetInfo`` / ``torch.cuda.mem_get_info()[1]`` reports: the number vLLM logs as
``total_gpu_memory`` and torch prints in OOM messages ("GPU 0 has a total capacity of 79.19
GiB"). That is the base ``--gpu-memory-utilization`` multiplies, so it is what a planner needs.
``marketed_memory_gb`` is the number on the box. Vendors write "GB" but size the memory
stacks in binary units, so the exposed GiB sits a little *below* the marketed number
(H100: 79.19 GiB exposed of "80 GB"); tests hold every entry between 90% and 100% of it.

It varies by a few hundredths of a GiB with driver version and ECC mode (torch OOMs on the same
A100 80GB read 79.14, 79.15 or 79.25 GiB); each entry records the figure it took and where.

``memory_basis``: "measured" means the figure was seen in a real log (torch OOM message, vLLM
log, rocminfo). Torch and vLLM print GiB with 2 decimals, so those entries hold
``round(X * 2**30)`` bytes (exact to +-5 MiB). "estimated" means derived (nvidia-smi MiB, or a
sibling card with the same memory configuration); the source says how.

Units: bytes (ints), bytes/s (``bandwidth_bytes_per_s``: 3.35 TB/s -> 3_350_000_000_000),
FLOP/s (``bf16_dense_flops``, ``fp8_dense_flops``). GB, TB/s, TFLOPS are decimal (10**9, 10**12);
GiB is 2**30. ``fp8_dense_flops`` is None where the part has no FP8 tensor math (Ampere and older).
BF16 FLOP/s are dense (no 2:4 sparsity) tensor-core rates with FP32 accumulate. Datasheets
often print the sparse figure with an asterisk; those are halved here and the source says so.
GeForce cards run BF16-with-FP32-accumulate at half their FP16-accumulate rate; that half is used,
and FP8 likewise with FP32 accumulate. For the GeForce cards no whitepaper table covers (RTX 4070
class, RTX 5070/5080 class) the rates are derived as the whitepapers' own per-SM rate x SMs x boost
clock: 512 dense BF16 FLOP per SM per clock with FP32 accumulate (RTX 4090: 128 SM x 2.52 GHz x 512 =
165.2 TF, the whitepaper's figure; RTX 5090: 170 x 2.407 x 512 = 209.5 TF), FP8 twice that. The RTX PRO
Blackwell cards below the 6000 (``_rtx_pro``) take the RTX PRO 6000's full rate, 1024 per SM per clock.
"""

import math
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from kvplan.errors import PlanInputError

GIB = 2**30
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.-]*$")


class GpuSpec(BaseModel):
    """One accelerator. All numbers are per GPU."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str  # catalog key and CLI value: --gpu H100-SXM
    vendor: str  # "NVIDIA" | "AMD" | "Intel" | "custom"
    marketed_memory_gb: float = Field(gt=0)
    memory_bytes: int = Field(gt=0)  # total from cudaMemGetInfo / torch.cuda.mem_get_info
    memory_basis: Literal["measured", "estimated"]
    bandwidth_bytes_per_s: int = Field(gt=0)
    bf16_dense_flops: int = Field(gt=0)
    fp8_dense_flops: int | None = Field(default=None, gt=0)  # None: no FP8 tensor math
    gpus_per_node: int = Field(gt=0)
    interconnect: str
    source: str

    @field_validator("name")
    @classmethod
    def _cli_safe(cls, v: str) -> str:
        if not _NAME_RE.match(v):
            raise ValueError(f"{v!r}: use letters, digits, '-' and '.' only")
        return v

    @property
    def memory_gib(self) -> float:
        """Exposed memory in GiB (2**30 bytes)."""
        return self.memory_bytes / GIB


def _gib(x: float) -> int:
    """A 2-decimal GiB figure from a log -> bytes."""
    return round(x * GIB)


def _spec(name, vendor, marketed_gb, memory_bytes, basis, tb_s, tflops, per_node, link, source, fp8=None):
    return GpuSpec(
        name=name, vendor=vendor, marketed_memory_gb=marketed_gb, memory_bytes=memory_bytes,
        memory_basis=basis, bandwidth_bytes_per_s=round(tb_s * 1e12),
        bf16_dense_flops=round(tflops * 1e12),
        fp8_dense_flops=round(fp8 * 1e12) if fp8 is not None else None, gpus_per_node=per_node,
        interconnect=link, source=source,
    )


def _geforce(sms: int, boost_ghz: float) -> tuple[float, float]:
    """(dense BF16, dense FP8) TFLOPS with FP32 accumulate of a GeForce Ada/Blackwell card: 512 and
    1024 FLOP per SM per clock (see the module docstring). RTX 4070 Ti SUPER: 66 x 2.61 x 512 = 88.2."""
    bf16 = round(sms * boost_ghz * 512 / 1000, 1)
    return bf16, round(2 * bf16, 1)


def _rtx_pro(name, marketed_gb, memory_bytes, tb_s, sms, boost_ghz, per_node, mem_note, spec_note):
    """An RTX PRO Blackwell card (SM 12.0) whose tensor rates NVIDIA's whitepaper does not table: 1024 dense BF16
    FLOP per SM per clock with FP32 accumulate (full rate, the RTX PRO 6000 row's whitepaper figure: 188 SM x 2.617
    GHz x 1024 = 503.8 TF), FP8 twice that. RTX PRO 4000: 70 x 2.617 x 1024 = 187.6 TF BF16, 375.2 TF FP8."""
    bf16 = round(sms * boost_ghz * 1024 / 1000, 1)
    fp8 = round(2 * bf16, 1)
    return _spec(name, "NVIDIA", marketed_gb, memory_bytes, "estimated", tb_s, bf16, per_node, "PCIe 5.0 x16",
                 f"{mem_note}; {spec_note}; flops: derived, {sms} SM x {boost_ghz} GHz boost x 1024 dense BF16 FLOP "
                 f"per SM per clock = {bf16} TF, FP8 {fp8} TF dense (full-rate FP32 accumulate assumed as on the "
                 "RTX PRO 6000; NVIDIA publishes only FP4 'AI TOPS' for this card, and a third-party table "
                 "(hmc-tech.com) lists half-rate FP32 accumulate for the RTX PRO 4500)", fp8=fp8)


# nvidia-smi total -> cudaMemGetInfo total on the RTX 5090 (32607 MiB vs 31.36 GiB = 32,113 MiB: 494 MiB), the
# nearest catalogued card in size and driver branch to the 24 / 32 GB RTX PRO Blackwell cards (the RTX PRO 6000
# shows 638 MiB: 97887 MiB vs 94.97 GiB)
_SMI_GAP_MIB = 494
_PRO6000_SHARE = ("mem: estimated at the RTX PRO 6000's exposed share (94.97 of 96 GiB = 98.93%) of the card's "
                  "memory, no public nvidia-smi table or log of this card found")

_OOM = "torch OOM 'GPU 0 has a total capacity of {} GiB'"

# name, vendor, marketed GB, exposed bytes, basis, TB/s, dense BF16 TFLOPS, per node, link, source
_ROWS = [
    # --- Datacenter, NVIDIA Ampere ---
    _spec("A100-40GB", "NVIDIA", 40, _gib(39.39), "measured", 1.555, 312, 8, "NVLink 3 600 GB/s",
          "mem: " + _OOM.format("39.39") + " on ml.p4d.24xlarge (8x A100-SXM4-40GB), "
          "philschmid/llm-sagemaker-sample#25 (newer drivers read 39.50: TianheWu/CoSeR#10); "
          "bw/flops: NVIDIA A100 datasheet, SXM 40GB (BF16 624 TF is sparse; 312 dense)"),
    _spec("A100-80GB", "NVIDIA", 80, _gib(79.14), "measured", 2.039, 312, 8, "NVLink 3 600 GB/s",
          "mem: " + _OOM.format("79.14") + " on A100 80GB, lianqi1008/Control-GIC#6 (79.15 and, on "
          "older drivers, 79.25 also seen: levihsu/OOTDiffusion#235); nvidia-smi 81920 MiB "
          "(modal-labs/modal-client#2797); bw/flops: NVIDIA A100 datasheet, SXM 80GB"),
    _spec("A100-80GB-PCIe", "NVIDIA", 80, _gib(79.14), "estimated", 1.935, 312, 8,
          "PCIe 4.0 x16 (+NVLink bridge 600 GB/s pairs)",
          "mem: estimated equal to A100-80GB SXM (same 80 GB HBM2e, nvidia-smi 81920 MiB on both); "
          "bw/flops: NVIDIA A100 datasheet, PCIe 80GB column"),
    _spec("A10", "NVIDIA", 24, _gib(21.99), "measured", 0.600, 125, 8, "PCIe 4.0 x16",
          "mem: " + _OOM.format("21.99") + " on a Lambda A10, zai-org/CogVLM#236 (ECC on: "
          "nvidia-smi 23028 MiB, modal-labs/modal-client#2797); bw/flops: NVIDIA A10 datasheet "
          "(BF16 250 TF is sparse; 125 dense)"),
    _spec("A10G", "NVIDIA", 24, _gib(22.19), "measured", 0.600, 125, 8, "PCIe 4.0 x16",
          "mem: torch OOM '22.19 GiB total capacity' on SageMaker ml.g5 (A10G), "
          "vllm-project/vllm#372; bw/flops: AWS publishes no A10G datasheet, NVIDIA A10 "
          "datasheet figures used (A10G is AWS's A10 variant, up to 8 per g5.48xlarge)"),
    _spec("A40", "NVIDIA", 48, _gib(44.42), "estimated", 0.696, 149.7, 8,
          "PCIe 4.0 x16 (+NVLink bridge 112.5 GB/s pairs)",
          "mem: estimated equal to L40S: public nvidia-smi tables of the A40 read 46068 MiB with ECC on, as it "
          "ships (index file ids 32335715336, 20563967892; 49140 MiB with ECC off, 69262004650), the L40S's "
          "46068 MiB that its torch OOM turns into 44.42 GiB (no A40 log with the torch figure found); bw/flops: "
          "NVIDIA A40 datasheet (696 GB/s; BF16 tensor 299.4 TF* sparse -> 149.7 dense); Ampere GA102, SM 8.6, "
          "no FP8 tensor math"),
    # --- Datacenter, NVIDIA Ada ---
    _spec("L4", "NVIDIA", 24, _gib(22.03), "measured", 0.300, 121, 8, "PCIe 4.0 x16",
          "mem: " + _OOM.format("22.03") + " on L4, ArcInstitute/evo2#190 (22.05-22.07 on other "
          "drivers; nvidia-smi 23034 MiB); bw/flops: NVIDIA L4 datasheet (BF16 242 TF* sparse)"
          "; fp8: L4 datasheet 485 TF* sparse -> 242.5 dense", fp8=242.5),
    _spec("L40S", "NVIDIA", 48, _gib(44.42), "measured", 0.864, 362.05, 8, "PCIe 4.0 x16",
          "mem: " + _OOM.format("44.42") + " on 8x L40S, stepfun-ai/Step-Video-T2V#8 (ECC on: "
          "nvidia-smi 46068 MiB); bw/flops: NVIDIA L40S datasheet (BF16 733 TF* sparse)"
          "; fp8: L40S datasheet 1,466 TF* sparse -> 733 dense", fp8=733),
    _spec("L20", "NVIDIA", 48, _gib(44.42), "estimated", 0.864, 119.5, 8, "PCIe 4.0 x16",
          "mem: estimated equal to L40S (the same 48 GB GDDR6 with ECC on an AD102 board, nvidia-smi "
          "46068 MiB on both); bw/flops: NVIDIA L20 product brief as widely reported (48 GB GDDR6, "
          "864 GB/s, FP16/BF16 tensor 119.5 TF dense, FP8 239 TF dense); China-market part", fp8=239),
    # --- Datacenter, NVIDIA Hopper ---
    _spec("H100-SXM", "NVIDIA", 80, _gib(79.19), "measured", 3.35, 989.4, 8, "NVLink 4 900 GB/s",
          "mem: vLLM 'total_gpu_memory (79.19GiB)' and " + _OOM.format("79.19") + " in many "
          "public H100 SXM logs; nvidia-smi 81559 MiB (modal-labs/modal-client#2797); bw/flops: "
          "NVIDIA H100 datasheet SXM (BF16 1,979 TF* is sparse; 989.4 dense per H100 whitepaper)"
          "; fp8: H100 datasheet SXM 3,958 TF* sparse -> 1,979 dense", fp8=1979),
    _spec("H100-PCIe", "NVIDIA", 80, _gib(79.19), "estimated", 2.0, 756.5, 8,
          "PCIe 5.0 x16 (+NVLink bridge 600 GB/s pairs)",
          "mem: estimated equal to H100-SXM (nvidia-smi 81559 MiB on both 80 GB parts); bw/flops: "
          "NVIDIA H100 datasheet PCIe (BF16 1,513 TF* sparse -> 756.5 dense)"
          "; fp8: H100 datasheet PCIe 3,026 TF* sparse -> 1,513 dense", fp8=1513),
    _spec("H100-NVL", "NVIDIA", 94, _gib(93.00), "measured", 3.9, 835.5, 8,
          "PCIe 5.0 x16 (+NVLink bridge 600 GB/s pairs)",
          "mem: " + _OOM.format("93.00") + " on RunPod H100 NVL 94GB, ali-vilab/VACE#56 (93.09-93.10 "
          "in other logs); bw/flops: NVIDIA H100 NVL datasheet (BF16 1,671 TF* sparse -> 835.5)"
          "; fp8: H100 NVL datasheet 3,341 TF* sparse -> 1,670.5 dense", fp8=1670.5),
    _spec("H200", "NVIDIA", 141, _gib(139.81), "measured", 4.8, 989.4, 8, "NVLink 4 900 GB/s",
          "mem: " + _OOM.format("139.81") + " on 8x H200, sungwon-chae/arxiv_confi "
          "etu_logging.md (139.80 in other logs); bw/flops: NVIDIA H200 datasheet SXM "
          "(BF16 1,979 TF* sparse -> 989.4 dense); fp8: H200 datasheet SXM 3,958 TF* sparse -> 1,979 dense", fp8=1979),
    _spec("H200-NVL", "NVIDIA", 141, _gib(139.81), "estimated", 4.8, 835.5, 8,
          "PCIe 5.0 x16 (+NVLink bridge 900 GB/s, 2- or 4-way)",
          "mem: estimated equal to H200 SXM: public nvidia-smi output of 'NVIDIA H200 NVL' reads 143771 MiB per "
          "GPU (index file ids 63088202880, 66510701415), the H200 SXM's total, whose torch OOM reads 139.81 GiB; "
          "bw/flops: NVIDIA H200 NVL datasheet (141 GB HBM3e, 4.8 TB/s, BF16 1,671 TF* sparse -> 835.5 dense); "
          "fp8: same datasheet, 3,341 TF* sparse -> 1,670.5 dense", fp8=1670.5),
    _spec("H20", "NVIDIA", 96, _gib(95.00), "measured", 4.0, 148, 8, "NVLink 4 900 GB/s",
          "mem: torch OOM 'GPU has a total capacity of 95.00 GiB' on H20 96G, "
          "modelscope/DiffSynth-Studio#1238; bw/flops: NVIDIA H20 product brief as widely "
          "reported (96 GB HBM3, 4.0 TB/s, BF16 148 TF dense, FP8 296 TF); fp8: 296 TF dense, same brief", fp8=296),
    # --- Datacenter, NVIDIA Blackwell ---
    _spec("B200", "NVIDIA", 180, _gib(178.35), "measured", 7.7, 2250, 8, "NVLink 5 1.8 TB/s",
          "mem: vLLM log 178.35 GiB (vllm-project/vllm PR #25683), cudaDeviceProp totalGlobalMem "
          "178.35 GiB in pytorch/ao#4002, and " + _OOM.format("178.35") + "; bw/flops: NVIDIA "
          "HGX B200 datasheet (7.7 TB/s; earlier DGX material said 8; BF16 4.5 PF* sparse -> 2.25)"
          "; fp8: HGX B200 72 PF* sparse per 8 GPUs -> 4.5 PF dense", fp8=4500),
    _spec("GB200", "NVIDIA", 186, _gib(184.00), "measured", 8.0, 2500, 4,
          "NVLink 5 1.8 TB/s (72-GPU NVL72 domain)",
          "mem: torch OOM 'GPU 3 has a total capacity of 184.00 GiB' on GB200, NVIDIA/srt-slurm#172 "
          "(184.31 in other logs); bw/flops: NVIDIA GB200 NVL72 spec per GPU (13.4 TB, 576 TB/s, "
          "BF16 360 PF* sparse over 72 GPUs -> 2.5 PF dense); 4 GPUs per compute tray"
          "; fp8: GB200 NVL72 720 PF* sparse over 72 GPUs -> 5 PF dense", fp8=5000),
    _spec("B300", "NVIDIA", 288, _gib(267.69), "measured", 8.0, 2250, 8, "NVLink 5 1.8 TB/s",
          "mem: " + _OOM.format("267.69") + " in several public B300 logs (repository not pinned "
          "down); bw/flops: NVIDIA HGX B300 spec (288 GB, 8 TB/s; BF16 36 PF* sparse per 8 GPUs "
          "-> 2.25 PF dense), also datacrunch-research/blogs blackwell_vms.md"
          "; fp8: HGX B300 72 PF* sparse per 8 GPUs -> 4.5 PF dense", fp8=4500),
    _spec("GB300", "NVIDIA", 288, _gib(267.69), "estimated", 8.0, 2500, 4,
          "NVLink 5 1.8 TB/s (72-GPU NVL72 domain)",
          "mem: estimated equal to B300 (the same 288 GB of HBM3E per GPU; no public log found); "
          "bw/flops: NVIDIA GB300 NVL72 spec per GPU (20.7 TB HBM3E and 576 TB/s over 72 GPUs; BF16 "
          "360 PF* sparse -> 2.5 PF dense; FP8 720 PF* sparse -> 5 PF dense); 4 GPUs per compute tray",
          fp8=5000),
    # --- Datacenter, AMD CDNA 3 ---
    _spec("MI300X", "AMD", 192, 201_310_208 * 1024, "measured", 5.3, 1307.4, 8,
          "Infinity Fabric 7x128 GB/s",
          "mem: rocminfo GLOBAL pool 'Size: 201310208 KB' = 206,141,652,992 B = 191.98 GiB "
          "(ROCm/rocm-examples#187, ROCm/legacy-rocm-build#4414), matching HIP OOM 'total "
          "capacity of 191.98 GiB'; bw/flops: AMD Instinct MI300X datasheet (BF16 2,614.9 TF "
          "sparse, 1,307.4 dense); fp8: same datasheet, 2,614.9 TF dense (5,229.8 sparse)", fp8=2614.9),
    _spec("MI325X", "AMD", 256, _gib(255.98), "measured", 6.0, 1307.4, 8,
          "Infinity Fabric 7x128 GB/s",
          "mem: HIP OOM 'GPU 0 has a total capacity of 255.98 GiB' on 8x MI325X, "
          "vllm-project/vllm#41962; bw/flops: AMD Instinct MI325X datasheet (256 GB HBM3E, "
          "6 TB/s, BF16 1,307.4 TF dense); fp8: same datasheet, 2,614.9 TF dense", fp8=2614.9),
    _spec("MI355X", "AMD", 288, 301_973_504 * 1024, "measured", 8.0, 2516.6, 8,
          "Infinity Fabric 7x153.6 GB/s",
          "mem: rocminfo gfx950 GLOBAL pool 'Size: 301973504(KB)' = 287.98 GiB (a public rocminfo test fixture), "
          "matching HIP OOMs 'GPU 0 has a total capacity of 287.98 GiB' in many public MI355X logs; bw/flops: AMD "
          "Instinct MI355X datasheet (288 GB HBM3E, 8 TB/s, BF16 2.5 PF "
          "dense, FP8 5.0 PF dense)", fp8=5033.2),
    # --- Datacenter, Intel ---
    _spec("Gaudi3", "Intel", 128, _gib(126.0), "estimated", 3.7, 1835, 8,
          "24x 200 GbE RoCE on die (21 to peers, 3 scale-out)",
          "Intel Gaudi 3 (HL-325L OAM). mem: estimated: 128 GiB of HBM2e (hl-smi 131072 MiB) less ~2 GiB "
          "the runtime keeps, as on Gaudi 2 (no public log of the usable total found); bw/flops: Intel "
          "Gaudi 3 AI accelerator white paper (3.7 TB/s, 1,835 TF BF16 and FP8 matrix, dense)", fp8=1835),
    # --- Workstation ---
    _spec("RTX-A6000", "NVIDIA", 48, _gib(47.53), "estimated", 0.768, 154.8, 8,
          "PCIe 4.0 x16 (+NVLink bridge 112.5 GB/s pairs)",
          "mem: estimated: nvidia-smi 49140 MiB with ECC off (47.99 GiB) minus ~0.46 GiB, the "
          "47.53 GiB that torch OOMs on 49140-MiB cards print (none found naming an A6000; with "
          "ECC on expect ~44.4); bw/flops: NVIDIA RTX A6000 datasheet (tensor 309.7 TF* sparse)"),
    _spec("RTX-6000-Ada", "NVIDIA", 48, _gib(44.43), "measured", 0.960, 364.2, 8, "PCIe 4.0 x16",
          "mem: " + _OOM.format("44.43") + " on RTX 6000 Ada with ECC on (nvidia-smi 46068 MiB), "
          "DINGYANB/MTVCrafter#21 (ECC off: 49140 MiB, ~47.5 GiB); bw/flops: NVIDIA RTX 6000 Ada "
          "datasheet and Ada Lovelace whitepaper (BF16 FP32-acc 364.2 dense / 728.5 sparse)"
          "; fp8: same datasheet, 1,457 TF* sparse -> 728.5 dense", fp8=728.5),
    _spec("RTX-PRO-6000", "NVIDIA", 96, _gib(94.97), "measured", 1.792, 503.8, 8, "PCIe 5.0 x16",
          "RTX PRO 6000 Blackwell. mem: cudaMemGetInfo 'total=94.97 GiB' on a 97887-MiB card, "
          "antirez/ds4#431; bw/flops: NVIDIA RTX PRO 6000 Blackwell datasheet (1,792 GB/s; "
          "4,000 AI TOPS FP4 sparse / 8 -> ~504 TF BF16 dense, full-rate FP32 accumulate)"
          "; fp8: twice the BF16 rate, ~1,008 TF dense (2,000 AI TOPS FP8 sparse / 2)", fp8=1007.6),
    _rtx_pro("RTX-PRO-6000-Max-Q", 96, _gib(94.97), 1.792, 188, 2.288, 4,
             "RTX PRO 6000 Blackwell Max-Q Workstation Edition (300 W). mem: estimated equal to RTX-PRO-6000 (the "
             "same GB202 board memory, 96 GB GDDR7 ECC on 512 bits; nvidia-smi 97887 MiB on the workstation and "
             "server editions)",
             "bw: 1,792 GB/s, the same memory system (purepc.pl GTC 2025 lineup article); SMs / clock: "
             "technical.city spec page (188 SM, 2,288 MHz boost, FP32 110.1 TF = 24,064 x 2 x 2.288)"),
    _rtx_pro("RTX-PRO-5000", 48, _gib(47.49), 1.344, 110, 2.377, 4,
             "RTX PRO 5000 Blackwell 48 GB (GB202). " + _PRO6000_SHARE.replace("memory,", "memory (48 x 0.9893 = "
                                                                               "47.49 GiB),"),
             "bw: 1,344 GB/s, 48 GB GDDR7 ECC on 384 bits, 110 SM (purepc.pl GTC 2025 lineup article); clock: "
             "2,377 MHz boost, technical.city's RTX PRO 5000 72 GB page (the same 110-SM GB202 configuration)"),
    _rtx_pro("RTX-PRO-5000-72GB", 72, _gib(71.23), 1.344, 110, 2.377, 4,
             "RTX PRO 5000 72 GB Blackwell (GB202, October 2025). " + _PRO6000_SHARE.replace(
                 "memory,", "memory (72 x 0.9893 = 71.23 GiB),"),
             "bw / SMs / clock: technical.city spec page (72 GB GDDR7 on 384 bits, 1.34 TB/s = 1,344 GB/s, 14,080 "
             "CUDA cores = 110 SM, 2,377 MHz boost, FP32 66.94 TF)"),
    _rtx_pro("RTX-PRO-4500", 32, (32_623 - _SMI_GAP_MIB) * 2**20, 0.896, 82, 2.617, 4,
             "RTX PRO 4500 Blackwell (GB203). mem: estimated: nvidia-smi 32623 MiB (public logs, index file ids "
             "71398061483, 60340131563, the latter 'compute capability 12.0') less the RTX 5090's 494-MiB gap "
             "between nvidia-smi and cudaMemGetInfo = 32,129 MiB = 31.38 GiB (no log with the cudaMemGetInfo total "
             "found)",
             "bw / SMs / clock: technical.city spec page (32 GB GDDR7 on 256 bits, 896 GB/s, 10,496 CUDA cores = "
             "82 SM, 2,617 MHz boost, FP32 54.94 TF)"),
    _rtx_pro("RTX-PRO-4000", 24, (24_467 - _SMI_GAP_MIB) * 2**20, 0.672, 70, 2.617, 4,
             "RTX PRO 4000 Blackwell (GB203). mem: estimated: nvidia-smi 24467 MiB (the 0.28.0 RunPod log of "
             "tests/test_engine_logs_dec03b.py, index file id 67578381996, 'of 24,467' MiB; a Vast.ai offer "
             "fixture, 57397401818) less the RTX 5090's 494-MiB gap between nvidia-smi and cudaMemGetInfo = "
             "23,973 MiB = 23.41 GiB (the log prints no cudaMemGetInfo total; the catalogued cards' gaps, 357 - "
             "638 MiB, put it at 23.27 - 23.55 GiB)",
             "bw / SMs / clock: cputronic.com spec page (24 GB GDDR7 on 192 bits, 672 GB/s, 8,960 CUDA cores = 70 "
             "SM, 2,617 MHz boost, PCIe 5.0 x16)"),
    # --- Consumer (GeForce: BF16 with FP32 accumulate = half the FP16-accumulate rate) ---
    _spec("RTX-3090", "NVIDIA", 24, _gib(23.56), "measured", 0.936, 71, 4,
          "PCIe 4.0 x16 (+NVLink bridge 112.5 GB/s pairs)",
          "mem: vLLM log 'Free memory on device (22.93/23.56 GiB)' on 8x RTX 3090, "
          "wtdcode/vllm-backport#34 (vLLM logs also show 23.58; 2022 torch OOMs 23.70: "
          "GaoLii/DSP#10); bw/flops: NVIDIA GA102 whitepaper (FP32-acc 71 TF dense)"),
    _spec("RTX-4090", "NVIDIA", 24, _gib(23.64), "measured", 1.008, 165.2, 4, "PCIe 4.0 x16",
          "mem: torch OOM '23.64 GiB total capacity' on RTX 4090, TMElyralab/MuseTalk#76 and "
          "3DTopia/Phidias-Diffusion#8 (23.65-23.68 on other drivers); bw/flops: NVIDIA Ada "
          "Lovelace whitepaper (FP32-acc 165.2 TF dense; 330.3 is FP16-acc)"
          "; fp8: same whitepaper, FP32-acc 330.3 TF dense", fp8=330.3),
    _spec("RTX-5090", "NVIDIA", 32, _gib(31.36), "measured", 1.792, 209.5, 4, "PCIe 5.0 x16",
          "mem: " + _OOM.format("31.36") + " on RTX 5090, TrajectoryCrafter/TrajectoryCrafter#20 "
          "(31.37: Wan-Video/Wan2.1#465); bw/flops: NVIDIA RTX Blackwell whitepaper (FP32-acc "
          "209.5 TF dense; 419 FP16-acc, 838 sparse is the marketed figure)"
          "; fp8: same whitepaper, FP32-acc 419 TF dense", fp8=419),
]

_ADA_WP = "NVIDIA Ada GPU architecture whitepaper per-SM rates x NVIDIA spec page SMs and boost clock"
_BW_WP = "NVIDIA RTX Blackwell GPU architecture whitepaper per-SM rates x NVIDIA spec page SMs and boost clock"
_12GB = ("mem: torch OOM '11.73 GiB total capacity' on an RTX 4070 Ti, OpenLMLab/LOMO#17 (under Windows "
         "a 4070 SUPER reads 11.99: erew123/alltalk_tts#195)")
_16GB = ("mem: estimated: a torch OOM on a 16 GB card reads 'total capacity of 15.70 GiB' (qingze-bai/VSmTrans#3, "
         "card not named); a public RTX 4070 Ti SUPER training log reports '15.56 GB total'")
_GDDR7 = "mem: estimated at RTX 5090's exposed share (31.36 of 32 GiB = 98%) of the card's memory"


def _geforce_row(name, marketed_gb, gib_exposed, basis, tb_s, sms, boost_ghz, mem_note, whitepaper, bus):
    bf16, fp8 = _geforce(sms, boost_ghz)
    return _spec(name, "NVIDIA", marketed_gb, _gib(gib_exposed), basis, tb_s, bf16, 4, bus,
                 f"{mem_note}; bw: NVIDIA spec page ({tb_s * 1000:g} GB/s); flops: {whitepaper} "
                 f"({sms} SM x {boost_ghz} GHz: BF16 {bf16} TF, FP8 {fp8} TF dense, FP32 accumulate)",
                 fp8=fp8)


# Consumer cards people own and rent by the hour (marketplaces): the RTX 4070-5080 class.
_ROWS += [
    _geforce_row("RTX-4070", 12, 11.73, "estimated", 0.504, 46, 2.475,
                 _12GB.replace("mem:", "mem: estimated equal to RTX 4070 Ti (same 12 GB GDDR6X);"),
                 _ADA_WP, "PCIe 4.0 x16"),
    _geforce_row("RTX-4070-SUPER", 12, 11.73, "estimated", 0.504, 56, 2.475,
                 _12GB.replace("mem:", "mem: estimated equal to RTX 4070 Ti (same 12 GB GDDR6X);"),
                 _ADA_WP, "PCIe 4.0 x16"),
    _geforce_row("RTX-4070-Ti", 12, 11.73, "measured", 0.504, 60, 2.61, _12GB, _ADA_WP, "PCIe 4.0 x16"),
    _geforce_row("RTX-4070-Ti-SUPER", 16, 15.70, "estimated", 0.672, 66, 2.61, _16GB, _ADA_WP, "PCIe 4.0 x16"),
    _geforce_row("RTX-4080", 16, 15.70, "estimated", 0.7168, 76, 2.505, _16GB, _ADA_WP, "PCIe 4.0 x16"),
    _geforce_row("RTX-4080-SUPER", 16, 15.70, "estimated", 0.736, 80, 2.55, _16GB, _ADA_WP, "PCIe 4.0 x16"),
    _geforce_row("RTX-5070", 12, 11.76, "estimated", 0.672, 48, 2.512, _GDDR7, _BW_WP, "PCIe 5.0 x16"),
    _geforce_row("RTX-5070-Ti", 16, 15.68, "estimated", 0.896, 70, 2.452, _GDDR7, _BW_WP, "PCIe 5.0 x16"),
    _geforce_row("RTX-5080", 16, 15.68, "estimated", 0.960, 84, 2.617, _GDDR7, _BW_WP, "PCIe 5.0 x16"),
]

GPU_CATALOG: dict[str, GpuSpec] = {g.name: g for g in _ROWS}
assert len(GPU_CATALOG) == len(_ROWS), "duplicate GPU name"

# Extra spellings (already normalised, see _norm) -> catalog key. Catalog keys match themselves.
_ALIASES: dict[str, str] = {
    "a100": "A100-80GB", "a100-sxm": "A100-80GB", "a100-sxm4-80gb": "A100-80GB",
    "a100-80gb-sxm": "A100-80GB", "a100-sxm4-40gb": "A100-40GB", "a100-40gb-sxm": "A100-40GB",
    "a100-pcie": "A100-80GB-PCIe", "a100-pcie-80gb": "A100-80GB-PCIe",
    "h100": "H100-SXM", "h100-80gb": "H100-SXM", "h100-sxm5": "H100-SXM",
    "h100-80gb-hbm3": "H100-SXM", "h100-sxm-80gb": "H100-SXM", "h100-pcie-80gb": "H100-PCIe",
    "h100-nvl-94gb": "H100-NVL", "h100-94gb": "H100-NVL",
    "h200-sxm": "H200", "h200-141gb": "H200", "h20-96gb": "H20",
    "b200-180gb": "B200", "gb200-nvl72": "GB200", "b300-sxm": "B300",
    "mi300": "MI300X", "mi325": "MI325X", "mi355": "MI355X", "gb300-nvl72": "GB300",
    "gaudi-3": "Gaudi3", "gaudi": "Gaudi3", "hl-325l": "Gaudi3", "intel-gaudi-3": "Gaudi3", "l20-48gb": "L20",
    "rtx3090": "RTX-3090", "3090": "RTX-3090", "geforce-rtx-3090": "RTX-3090",
    "rtx4090": "RTX-4090", "4090": "RTX-4090", "geforce-rtx-4090": "RTX-4090",
    "rtx5090": "RTX-5090", "5090": "RTX-5090", "geforce-rtx-5090": "RTX-5090",
    "a6000": "RTX-A6000", "rtxa6000": "RTX-A6000",
    "rtx6000-ada": "RTX-6000-Ada", "6000-ada": "RTX-6000-Ada",
    "rtx-6000-ada-generation": "RTX-6000-Ada",
    "rtx-pro-6000-blackwell": "RTX-PRO-6000", "rtx-pro-6000-blackwell-workstation-edition":
    "RTX-PRO-6000", "rtx-pro-6000-blackwell-server-edition": "RTX-PRO-6000",
    "rtxpro6000": "RTX-PRO-6000", "pro6000": "RTX-PRO-6000",
    # torch / nvidia-smi device names of the other RTX PRO Blackwell cards ("NVIDIA RTX PRO 4000 Blackwell")
    "rtx-pro-6000-blackwell-max-q-workstation-edition": "RTX-PRO-6000-Max-Q",
    "rtx-pro-6000-blackwell-max-q": "RTX-PRO-6000-Max-Q", "rtx-pro-6000-max-q-workstation-edition":
    "RTX-PRO-6000-Max-Q",
    "rtx-pro-5000-blackwell": "RTX-PRO-5000", "rtx-pro-5000-48gb": "RTX-PRO-5000",
    "rtx-pro-5000-72gb-blackwell": "RTX-PRO-5000-72GB", "rtx-pro-5000-blackwell-72gb": "RTX-PRO-5000-72GB",
    "rtx-pro-4500-blackwell": "RTX-PRO-4500", "rtx-pro-4000-blackwell": "RTX-PRO-4000",
    "rtxpro4000": "RTX-PRO-4000", "rtxpro4500": "RTX-PRO-4500", "rtxpro5000": "RTX-PRO-5000",
    "h200-nvl-141gb": "H200-NVL", "a40-48gb": "A40",
}
# GeForce spellings of the RTX 40/50 cards: 'NVIDIA GeForce RTX 4070 Ti SUPER' -> 'geforce-rtx-4070-ti-super',
# and the run-together 'rtx4070tisuper' / '4070-ti-super'.
_ALIASES |= {alias: k for k in GPU_CATALOG if re.fullmatch(r"RTX-[45]0[0-9]0.*", k)
             for alias in ("geforce-" + k.lower(), k.lower().replace("-", ""), k.lower().removeprefix("rtx-"))}
_LOOKUP: dict[str, str] = {k.lower(): k for k in GPU_CATALOG} | _ALIASES


def _norm(name: str) -> str:
    """'NVIDIA H100 80GB HBM3' -> 'h100-80gb-hbm3'; 'AMD Instinct MI300X' -> 'mi300x'."""
    s = re.sub(r"[\s_/]+", "-", str(name).strip().lower())
    for prefix in ("nvidia-", "amd-", "instinct-", "tesla-"):
        s = s.removeprefix(prefix)
    return s


def get_gpu(name: str) -> GpuSpec:
    """Catalog lookup: case-insensitive, accepts aliases ('h100', 'A10G', 'a100-80gb')
    and torch/nvidia-smi device names. Unknown names raise PlanInputError(field='gpu')."""
    key = _LOOKUP.get(_norm(name))
    if key is None:
        valid = ", ".join(GPU_CATALOG)
        raise PlanInputError("gpu", f"unknown GPU {name!r}; valid names: {valid} "
                                    "(or describe your own with custom_gpu)")
    return GPU_CATALOG[key]


def _positive(field: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PlanInputError(field, f"must be a number, got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise PlanInputError(field, f"must be a positive finite number, got {value!r}")
    return float(value)


def custom_gpu(memory_gib: float, bandwidth_tb_s: float, bf16_tflops: float,
               name: str = "custom", *, gpus_per_node: int = 8,
               interconnect: str = "unspecified", fp8_tflops: float | None = None) -> GpuSpec:
    """A GPU not in the catalog. ``memory_gib`` is what the runtime exposes (GiB, 2**30),
    bandwidth in TB/s (10**12 B/s), dense BF16 in TFLOPS. Bad values raise PlanInputError
    naming the argument."""
    mem = _positive("memory_gib", memory_gib)
    bw = _positive("bandwidth_tb_s", bandwidth_tb_s)
    tf = _positive("bf16_tflops", bf16_tflops)
    fp8 = None if fp8_tflops is None else _positive("fp8_tflops", fp8_tflops)
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise PlanInputError("name", f"{name!r}: use letters, digits, '-' and '.' only")
    if isinstance(gpus_per_node, bool) or not isinstance(gpus_per_node, int) or gpus_per_node < 1:
        raise PlanInputError("gpus_per_node", f"must be a positive integer, got {gpus_per_node!r}")
    for field, v, unit in (("memory_gib", mem * GIB, "byte"), ("bandwidth_tb_s", bw * 1e12,
                           "byte/s"), ("bf16_tflops", tf * 1e12, "FLOP/s")):
        if round(v) < 1:
            raise PlanInputError(field, f"is below 1 {unit}")
    return GpuSpec(
        name=name, vendor="custom", marketed_memory_gb=mem, memory_bytes=round(mem * GIB),
        memory_basis="estimated", bandwidth_bytes_per_s=round(bw * 1e12),
        bf16_dense_flops=round(tf * 1e12), fp8_dense_flops=None if fp8 is None else max(1, round(fp8 * 1e12)),
        gpus_per_node=gpus_per_node, interconnect=interconnect,
        source=f"user-supplied: {mem:g} GiB exposed, {bw:g} TB/s, {tf:g} TFLOPS dense BF16",
    )
