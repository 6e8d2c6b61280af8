"""Default on-demand prices, US$ per GPU-hour, one per catalog GPU, each with its source and date.

What a price here is
--------------------
The rate a user pays to rent one GPU by the hour with no commitment (on-demand, not spot, not
reserved), in US dollars, from a public price page. Where a GPU is sold by the instance (AWS,
CoreWeave) the instance price is divided by its GPUs. Clouds differ by 2-5x for the same chip (an
H100 SXM was $2.69 on RunPod Community and $12.29 on Azure on 2026-11-09), so one consistent basis
matters more than the lowest number: the default is **RunPod Secure Cloud** (RunPod-operated
datacentres, per-second billing, no commitment) wherever RunPod lists the GPU, else Lambda, else
the cheapest public on-demand listing found, else an estimate.

``basis``: "listed" means the figure is a public on-demand price; ``as_of`` is the day that price was
read from the vendor's page (by the transcription the source names). "estimate" means no public
on-demand price was found; the source says why and how the figure was set. Every figure was looked up
for kvplan on ``PRICES_READ``. Prices move month to month: the page lets the user type their own, and
the link carries them.

Units: US$ per GPU-hour (float). ``cost_per_hour = price x GPUs``; see ``kvplan.picker``.
"""

from typing import Literal

from pydantic import BaseModel, ConfigDict

PRICES_READ = "2026-12-01"  # when these figures were looked up for kvplan

_RUNPOD = "RunPod Secure Cloud on-demand, runpod.io/pricing"
_SILY = "as transcribed in tgarg01/silybench-data derived/csv/gpu_prices.csv"
_RECEIPTS = "as transcribed in datareceipts/data-receipts 109-gpu-pricing/vendors.json"
_EVANGELIST = "as transcribed in api-evangelist/runpod plans/runpod-plans-pricing.yml"
_CLIFF = "cliffcenter.com/research/amd-inference-economics (research note 2026-05-18)"
_MARKET = ("estimate: a consumer card rented only on marketplaces (Vast.ai lists it; hosts set their own "
           "rates, no fixed price page), or owned; set between RTX 3090 ($0.25) and RTX 4090 ($0.74) by "
           "memory and bandwidth. Type your own, or your electricity cost if you own the card")



def _pro_share(gb: int, gb_s: int) -> str:
    """The source of an RTX PRO Blackwell estimate: the RTX PRO 6000's listed $1.45 scaled by the mean of the card's
    memory and bandwidth shares of it. RTX PRO 4000: (24/96 + 672/1792) / 2 = 0.3125 -> $0.45."""
    share = (gb / 96 + gb_s / 1792) / 2
    return (f"estimate: no public on-demand price page read for this card; the RTX PRO 6000's listed $1.45 (Akash) x "
            f"the mean of its memory and bandwidth shares, ({gb}/96 + {gb_s}/1792) / 2 = {share:.4g}")


class GpuPrice(BaseModel):
    """One GPU's default on-demand price (US$ per GPU-hour), its basis, source and date."""

    model_config = ConfigDict(frozen=True)
    gpu: str  # catalog key (kvplan.gpus.GPU_CATALOG)
    usd_per_gpu_hour: float
    basis: Literal["listed", "estimate"]
    source: str
    as_of: str  # YYYY-MM-DD the price was read from its page; PRICES_READ for estimates


def _p(gpu: str, usd: float, basis: str, as_of: str, source: str) -> GpuPrice:
    return GpuPrice(gpu=gpu, usd_per_gpu_hour=usd, basis=basis, source=source, as_of=as_of)


_ROWS = [
    # --- NVIDIA Ampere ---
    _p("A100-40GB", 1.99, "listed", "2026-11-16", f"Lambda 1x A100 SXM 40GB, lambda.ai/pricing, {_RECEIPTS} "
       "(also $1.99 on 2026-09-25, silybench)"),
    _p("A100-80GB", 1.79, "listed", "2026-11-09", f"{_RUNPOD} (A100 SXM 80GB), {_RECEIPTS}"),
    _p("A100-80GB-PCIe", 1.79, "listed", "2026-11-09", f"{_RUNPOD} (A100 PCIe 80GB), {_RECEIPTS}"),
    _p("A10", 1.29, "listed", "2026-09-25", f"Lambda 1x A10, lambda.ai/pricing, {_SILY}"),
    _p("A40", 0.55, "estimate", PRICES_READ,
       "estimate: no public per-GPU pod price read for it; RunPod bills 'A6000, A40' (48 GB) as one tier "
       "(docs.runpod.io/serverless/pricing, $0.00034/s flex), so RTX A6000's Vast.ai rate ($0.55)"),
    _p("A10G", 1.01, "estimate", PRICES_READ,
       "estimate: AWS g5.xlarge (1x A10G, 4 vCPU) us-east-1 on-demand list price $1.006/h, the long-standing "
       "figure; not re-read for this date"),
    # --- NVIDIA Ada datacentre ---
    _p("L4", 0.80, "listed", "2026-05-07", "Modal L4 $0.7992/h (per-second), modal.com/pricing as quoted by "
       "techbytes.app serverless GPU pricing matrix (prices verified 2026-05-07); RunPod lists L4 only in "
       "Serverless"),
    _p("L40S", 1.09, "listed", "2026-09-25", f"{_RUNPOD}, {_SILY}"),
    _p("L20", 0.80, "estimate", PRICES_READ,
       "estimate: a China-market card with no public US on-demand price; L40S's memory system (48 GB, "
       "864 GB/s) at a third of its compute, set below L40S ($1.09) at L4's rate"),
    # --- NVIDIA Hopper ---
    _p("H100-SXM", 3.99, "listed", "2026-11-09", f"{_RUNPOD}, {_RECEIPTS} ($3.49 on 2026-09-25, silybench)"),
    _p("H100-PCIe", 2.89, "listed", "2026-11-09", f"{_RUNPOD}, {_RECEIPTS}"),
    _p("H100-NVL", 3.19, "listed", "2026-11-09", f"{_RUNPOD}, {_RECEIPTS}"),
    _p("H200", 4.59, "listed", "2026-10-07", f"{_RUNPOD}, {_EVANGELIST} ($4.59 also on 2026-09-25, silybench)"),
    _p("H200-NVL", 3.67, "estimate", PRICES_READ,
       "estimate: no public per-GPU on-demand rate read for it; H200 SXM on RunPod ($4.59) x the H100 NVL / H100 "
       "SXM ratio there (3.19 / 3.99): 4.59 x 0.7995 = 3.67"),
    _p("H20", 1.80, "estimate", PRICES_READ,
       "estimate: an export-market part priced in CNY by Chinese clouds, no public US on-demand rate; H100-class "
       "memory (96 GB, 4 TB/s) at 15% of H100's compute, set at 60% of H100 PCIe ($2.89)"),
    # --- NVIDIA Blackwell ---
    _p("B200", 6.79, "listed", "2026-10-07", f"{_RUNPOD}, {_EVANGELIST} (also 2026-09-25, silybench)"),
    _p("GB200", 4.54, "listed", "2026-03-17", "Spheron GB200 Superchip $9.08/h on-demand = 2 Blackwell GPUs, "
       "$4.54 each (spheron.network blog 'H200 vs B200 vs GB200', prices as of 2026-03-17); rack-scale, not sold "
       "per GPU by most clouds"),
    _p("B300", 7.89, "listed", "2026-10-07", f"{_RUNPOD}, {_EVANGELIST}"),
    _p("GB300", 7.89, "estimate", PRICES_READ,
       "estimate: no public on-demand per-GPU rate found (GB300 NVL72 is sold by the rack under contract); set "
       "equal to B300 on RunPod ($7.89), the same GPU and 288 GB"),
    # --- AMD ---
    _p("MI300X", 1.85, "listed", "2026-05-18", f"Vultr MI300X on-demand $1.85/GPU-h, {_CLIFF}"),
    _p("MI325X", 1.95, "listed", "2026-05-18", f"TensorWave MI325X $1.95/GPU-h, {_CLIFF}"),
    _p("MI355X", 3.55, "estimate", PRICES_READ,
       "estimate: no public on-demand rate found; AMD parts rent at ~40-45% of the NVIDIA part with like memory "
       "(MI300X $1.85 vs H200 $4.59), so 0.45 x B300 ($7.89)"),
    # --- Intel ---
    _p("Gaudi3", 1.50, "estimate", PRICES_READ,
       "estimate: Gaudi 3 is offered by IBM Cloud and Intel Tiber AI Cloud by quote or by the 8-card node, no "
       "public per-card on-demand rate found; set below MI300X ($1.85), the nearest part by bandwidth"),
    # --- Workstation ---
    _p("RTX-A6000", 0.55, "listed", "2026-05-01",
       "Vast.ai on-demand 'RTX A6000 (48 GB) from USD 0.55/h' (fairlane.systems Vast.ai review, as of 2026-05)"),
    _p("RTX-6000-Ada", 1.09, "estimate", PRICES_READ,
       "estimate: rented mostly on marketplaces; the same AD102 chip and 48 GB as L40S, which RunPod bills in the "
       "same Serverless tier, so L40S's RunPod Secure rate ($1.09)"),
    _p("RTX-PRO-6000", 1.45, "listed", "2026-09-20", "Akash 'Pro 6000 WE 96GB PCIe $1.45/hr' (starting at), "
       "akash.network/pricing/gpus as transcribed in api-evangelist/akash plans/plans.yml"),
    _p("RTX-PRO-6000-Max-Q", 1.45, "estimate", PRICES_READ,
       "estimate: no public on-demand price page read for the Max-Q edition; the RTX PRO 6000's listed $1.45 "
       "(Akash), the same 96 GB and 1,792 GB/s"),
    _p("RTX-PRO-5000", 0.91, "estimate", PRICES_READ, _pro_share(48, 1344)),
    _p("RTX-PRO-5000-72GB", 1.09, "estimate", PRICES_READ, _pro_share(72, 1344)),
    _p("RTX-PRO-4500", 0.60, "estimate", PRICES_READ, _pro_share(32, 896)),
    _p("RTX-PRO-4000", 0.45, "estimate", PRICES_READ, _pro_share(24, 672)),
    # --- GeForce ---
    _p("RTX-3090", 0.25, "listed", "2026-05-01", "Vast.ai on-demand $0.20-0.30/h (chrisgmartin neocloud guide, "
       "Vast.ai hardware and tiers, 2026), the middle of the range"),
    _p("RTX-4090", 0.74, "listed", "2026-09-25", f"{_RUNPOD}, {_SILY}"),
    _p("RTX-5090", 0.87, "listed", "2026-06-01", "Vast.ai on-demand $0.865-1.141/h (usagepricing.com Vast.ai "
       "blueprint, rates captured June 2026), the low end"),
    _p("RTX-4070", 0.15, "estimate", PRICES_READ, _MARKET),
    _p("RTX-4070-SUPER", 0.17, "estimate", PRICES_READ, _MARKET),
    _p("RTX-4070-Ti", 0.18, "estimate", PRICES_READ, _MARKET),
    _p("RTX-4070-Ti-SUPER", 0.20, "estimate", PRICES_READ, _MARKET),
    _p("RTX-4080", 0.25, "estimate", PRICES_READ, _MARKET),
    _p("RTX-4080-SUPER", 0.27, "estimate", PRICES_READ, _MARKET),
    _p("RTX-5070", 0.18, "estimate", PRICES_READ, _MARKET),
    _p("RTX-5070-Ti", 0.27, "estimate", PRICES_READ, _MARKET),
    _p("RTX-5080", 0.35, "estimate", PRICES_READ, _MARKET),
]

DEFAULT_PRICES: dict[str, GpuPrice] = {p.gpu: p for p in _ROWS}
assert len(DEFAULT_PRICES) == len(_ROWS), "duplicate GPU in the price table"


def default_prices() -> dict[str, float]:
    """{catalog GPU: US$ per GPU-hour} for every GPU with a default price."""
    return {name: p.usd_per_gpu_hour for name, p in DEFAULT_PRICES.items()}


def effective_prices(overrides: dict[str, float] | None = None) -> dict[str, float]:
    """The defaults with the user's prices laid over them (a user price always wins)."""
    return default_prices() | dict(overrides or {})
