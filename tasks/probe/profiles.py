"""Named probe recipes: `quick` (CI and CPU: seconds), `standard` (weekly: minutes on a GPU), `full`.

    python -c "from tasks.probe.profiles import get_profile; print(get_profile('standard'))"

One small dataclass per benchmark; each field has a default and says why. A run is reproducible from
its profile name alone (STYLE.md rule 4). Bad values fail in __post_init__ naming the field.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace

GEMM_DTYPES = ("bf16", "fp16", "tf32", "fp32")


def _check(obj, name: str, ok: bool, expected: str) -> None:
    if not ok:
        raise ValueError(f"{type(obj).__name__}.{name} = {getattr(obj, name)!r}: expected {expected}")


def _positive(obj, *names: str) -> None:
    for n in names:
        _check(obj, n, getattr(obj, n) > 0, "a number > 0")


@dataclass(frozen=True)
class GemmConfig:
    dtypes: tuple[str, ...] = GEMM_DTYPES  # the four precisions training uses
    exhaustive: bool = False  # True: the full mamf-finder-style grid sweep (truth, slow)
    budget_s: float = 3.0  # wall budget per dtype for the shape search (cost, not truth): the
    # H200 sweep takes ~45 s, and the search (plus its refine) must stay within a tenth of that
    seeds: int = 16  # shapes measured before the hill-climb: KNOWN_GOOD, then the tiling model's best
    climb_from: int = 2  # hill-climb around this many leading shapes (one noisy reading can't strand it)
    warmup: int = 10  # untimed calls per shape: clocks ramp, cuBLAS picks its kernel
    iters: int = 30  # timed calls per shape (each its own event pair, L2 flushed before)
    refine_iters: int = 100  # timed calls for the best shapes after the search (a stable median)
    refine_top: int = 3  # how many of the searched shapes get the long re-measurement
    l2_flush_mib: int = 256  # > 4x the largest L2 (H200: 60 MiB): every call reads HBM cold
    idle_ratio: float = 1.0  # idle this x each timed call: a back-to-back sweep reaches the power
    # cap within ~1.4 s on an H200 (seen 2026-12-02: median clock 1575 MHz over 64 shapes), so the
    # ~2.5 s search keeps gaps; one shape's <= 0.6 s burst reads the same with or without them.
    # The power-capped rate is the sustained benchmark's job
    shape_timed_s: float = 0.3  # cap on one shape's timed calls (fewer iters, >= 10, for slow
    # ones: an fp32 8192^3 product takes ~22 ms on an H200)
    spinup_s: float = 0.3  # untimed load before a dtype's search: clocks leave idle (345 MHz)
    classic_2048: bool = True  # the classic 2048^3 fp32 torch.mm check, comparable everywhere
    cpu_size: int = 1024  # square fp32 matmul side on CPU (GFLOP/s-class hosts)
    cpu_iters: int = 10  # timed CPU matmuls

    def __post_init__(self):
        bad = [d for d in self.dtypes if d not in GEMM_DTYPES]
        _check(self, "dtypes", not bad and len(self.dtypes) > 0, f"a subset of {GEMM_DTYPES}")
        _positive(self, "budget_s", "warmup", "iters", "refine_iters", "refine_top", "cpu_size",
                  "cpu_iters", "seeds", "climb_from")
        _check(self, "l2_flush_mib", self.l2_flush_mib >= 0, "an integer >= 0")
        _check(self, "idle_ratio", 0 <= self.idle_ratio <= 10, "in [0, 10]")
        _check(self, "spinup_s", self.spinup_s >= 0, "a number >= 0")
        _check(self, "shape_timed_s", self.shape_timed_s > 0, "a number > 0")


@dataclass(frozen=True)
class SustainedConfig:
    enabled: bool = True  # burst figures overstate long jobs by up to ~22% on power-capped GPUs
    duration_s: float = 60.0  # issue 10: standard >= 60 s, long enough to reach the power cap
    window_s: float = 5.0  # one TFLOP/s figure per window; the reference used 5 s windows
    trim: float = 0.1  # drop this fraction of windows at each end before the median
    fixed_shape: tuple[int, int, int] | None = (2048, 7168, 4096)  # also sustained, for as long, on
    # every instance type: the search's best shape differs between types and between runs (and so
    # does its power-capped rate: 668-685 TFLOP/s on one H200), a fixed shape is like for like over
    # time and across types. This one is ../shared/reference's (~620 there); None: skip it
    pick_ramp_s: float = 2.0  # back-to-back load before ranking the search's candidates: an H200
    # reaches its 700 W cap within ~1.4 s of continuous GEMMs (2026-12-02); 0: no ranking, hold
    # the burst-best shape
    pick_window_s: float = 0.5  # one power-capped reading per candidate per round
    pick_rounds: int = 2  # rounds over the candidates, alternating: a drifting clock favours none

    def __post_init__(self):
        _positive(self, "duration_s", "window_s", "pick_window_s", "pick_rounds")
        _check(self, "pick_ramp_s", self.pick_ramp_s >= 0, "a number >= 0")
        _check(self, "window_s", self.window_s <= self.duration_s, "<= duration_s")
        _check(self, "trim", 0 <= self.trim < 0.5, "in [0, 0.5)")
        _check(self, "fixed_shape", self.fixed_shape is None or (
            len(self.fixed_shape) == 3 and all(isinstance(d, int) and d > 0 for d in self.fixed_shape)),
            "None or three positive integers (m, n, k)")


@dataclass(frozen=True)
class MemoryConfig:
    gpu_mib: int = 2048  # per buffer: 30x the H200 L2, so HBM and not cache is measured
    cpu_mib: int = 64  # per buffer on CPU hosts: beyond any LLC, small enough for CI
    warmup: int = 3  # untimed passes
    iters: int = 20  # timed passes; median reported

    def __post_init__(self):
        _positive(self, "gpu_mib", "cpu_mib", "iters")


@dataclass(frozen=True)
class HostDevConfig:
    mib: int = 1024  # per transfer: large enough to hide launch latency (nvbandwidth uses 512 MiB)
    pinned_iters: int = 10  # timed pinned transfers per direction
    pageable_iters: int = 5  # pageable transfers are slower and noisier; fewer of them
    warmup: int = 2  # untimed transfers per direction

    def __post_init__(self):
        _positive(self, "mib", "pinned_iters", "pageable_iters")


@dataclass(frozen=True)
class StorageConfig:
    big_file_mib: int = 1024  # one sequential file; bigger than readahead and typical caches
    chunk_mib: int = 8  # read size for the sequential file (large-block streaming)
    small_files: int = 20000  # issue 3: ~20k x 4 KiB, image-caption style datasets
    small_kib: int = 4  # size of each small file
    repeats: int = 2  # cold reads of the big file (page cache evicted before each)
    data_dir: str | None = None  # None: a temporary directory; the CLI's --data-dir overrides it
    queue_depth: int = 32  # issue 45: 4 KiB random reads at queue depth 1 and this depth
    random_reads: int = 4000  # 4 KiB reads per depth: a p99 rests on its 40 slowest
    random_max_s: float = 3.0  # ... or stop a depth after this long (a 1 ms network volume at QD1
    #   reads ~3,000 in 3 s): the two depths add <= 6 s to the profile

    def __post_init__(self):
        _positive(self, "big_file_mib", "chunk_mib", "small_files", "small_kib", "repeats", "queue_depth",
                  "random_reads", "random_max_s")


@dataclass(frozen=True)
class FeedConfig:
    warmup_batches: int = 10  # issue 3: latency after 10 warm-up rounds
    timed_batches: int = 50  # enough for a p95 (the 3rd-highest of 50)
    batch_size: int = 32  # a typical per-GPU vision batch
    item_shape: tuple[int, ...] = (3, 224, 224)  # an ImageNet-sized uint8 image per item
    workers: int = 4  # DataLoader worker processes (capped at the host's cores)
    pin_memory: bool = True  # used only where CUDA is present
    step_ms: float = 12.0  # the training step the loader must keep ahead of: ResNet-50 with AMP trains
    #   ~2,600 images/s on one A100 (timm benchmark.py, huggingface/pytorch-image-models issue 1491,
    #   read 2026-12-07), 32 images in ~12 ms
    step_warmup: int = 5  # untimed steps before the wait share is timed (the queue refills)

    def __post_init__(self):
        _positive(self, "timed_batches", "batch_size", "step_ms")
        _check(self, "step_warmup", self.step_warmup >= 0, "an integer >= 0")
        _check(self, "workers", self.workers >= 0, "an integer >= 0")
        _check(self, "item_shape", all(d > 0 for d in self.item_shape), "positive dimensions")


@dataclass(frozen=True)
class NumaConfig:
    small_mib: int = 2  # issue 45: a KV-cache-sized copy, where launch and scheduling latency show
    large_mib: int = 256  # a bulk copy (weights, batches): bandwidth, the node's memory path
    small_iters: int = 200  # per direction and node: a p99 rests on the 2 slowest
    large_iters: int = 20  # per direction and node (256 MiB at ~50 GB/s: ~5 ms each)
    warmup: int = 5  # untimed copies per direction, size and node

    def __post_init__(self):
        _positive(self, "small_mib", "large_mib", "small_iters", "large_iters")
        _check(self, "warmup", self.warmup >= 0, "an integer >= 0")


@dataclass(frozen=True)
class SharingConfig:
    presets: tuple[str, ...] = ("bert-large",)  # issue 45: a light fine-tune; 1b (two fit on an
    #   80 GB card) in the full profile, where the time allows
    jobs: int = 2  # concurrent plain processes on one GPU (no MPS, no MIG: nothing to change on the host)
    duration_s: float = 8.0  # timed seconds per run, alone and together: fixed, not the steady rule,
    #   so the part costs ~2 x (start + build + warm-up + this) ~ 50 s on an H100
    warmup_s: float = 4.0  # untimed steps after the build (allocator, clocks), per process
    micro_batch: int | None = None  # None: the largest the memory model fits in 1/jobs of the card
    timeout_s: float = 150.0  # the whole part; a hung job is a failed attempt, not a stall
    on_cpu: bool = False  # a CPU host has no card to share, so the part is not_applicable there; only the
    #   probe's own test sets this, to run the two-process machinery end to end in CI (tests/test_probe_host_checks.py)

    def __post_init__(self):
        _check(self, "presets", len(self.presets) > 0, "at least one preset")
        _check(self, "jobs", isinstance(self.jobs, int) and self.jobs >= 2, "an integer >= 2")
        _positive(self, "duration_s", "warmup_s", "timeout_s")
        _check(self, "micro_batch", self.micro_batch is None or self.micro_batch >= 1, "None or >= 1")


@dataclass(frozen=True)
class CollectivesConfig:
    sizes_mib: tuple[int, ...] = (1, 16, 256, 1024)  # nccl-tests style sweep, latency to bandwidth
    iters: int = 20  # timed all-reduces per size
    timeout_s: float = 300.0  # the whole multi-process launch; a hang is a failure, not a stall

    def __post_init__(self):
        _check(self, "sizes_mib", len(self.sizes_mib) > 0 and min(self.sizes_mib) > 0,
               "positive sizes")
        _positive(self, "iters", "timeout_s")


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    gemm: GemmConfig = field(default_factory=GemmConfig)
    sustained: SustainedConfig = field(default_factory=SustainedConfig)
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    hostdev: HostDevConfig = field(default_factory=HostDevConfig)
    storage: StorageConfig = field(default_factory=StorageConfig)
    feed: FeedConfig = field(default_factory=FeedConfig)
    numa: NumaConfig = field(default_factory=NumaConfig)
    sharing: SharingConfig = field(default_factory=SharingConfig)
    collectives: CollectivesConfig = field(default_factory=CollectivesConfig)
    finetune_presets: tuple[str, ...] = ("tiny",)  # fine-tune presets (finetune/presets.py)
    finetune_budget_s: float = 600.0  # wall budget handed to the fine-tune
    finetune_options: dict = field(default_factory=dict)  # FinetuneOptions fields, by name
    retries: int = 0  # extra tries of a failed benchmark (every try is an attempt)

    def __post_init__(self):
        _check(self, "retries", self.retries >= 0, "an integer >= 0")
        _positive(self, "finetune_budget_s")

    def as_params(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


QUICK = Profile(
    name="quick",
    description="CI and CPU hosts: seconds. Every benchmark runs small; sustained GEMM a few seconds.",
    gemm=GemmConfig(budget_s=1.0, warmup=3, iters=10, refine_iters=20, refine_top=1,
                    cpu_size=1024, cpu_iters=5),
    sustained=SustainedConfig(duration_s=4.0, window_s=1.0, pick_ramp_s=0.5, pick_window_s=0.2,
                              pick_rounds=1),
    memory=MemoryConfig(gpu_mib=512, cpu_mib=32, warmup=1, iters=5),
    hostdev=HostDevConfig(mib=256, pinned_iters=5, pageable_iters=3, warmup=1),
    storage=StorageConfig(big_file_mib=32, small_files=1000, random_reads=300, random_max_s=1.0),
    feed=FeedConfig(timed_batches=20, batch_size=16, item_shape=(3, 64, 64), workers=2),
    numa=NumaConfig(large_mib=64, small_iters=50, large_iters=5, warmup=2),
    sharing=SharingConfig(presets=("tiny",), duration_s=1.0, warmup_s=0.3, micro_batch=1, timeout_s=150.0),
    collectives=CollectivesConfig(sizes_mib=(1, 64), iters=5, timeout_s=120.0),
    finetune_presets=("tiny",),
    finetune_budget_s=60.0,
    finetune_options={"steps": 8, "search": False},  # fixed steps and configuration: CI needs a
    #   bounded run, not the steady rule or the configuration search
)

STANDARD = Profile(
    name="standard",
    description="Weekly run: a few minutes on a GPU. Budgeted GEMM search, 60 s sustained GEMM.",
    finetune_presets=("1b", "8b-lora"),  # issue 4: the common presets; 8b-lora not_applicable where it won't fit
    finetune_budget_s=600.0,
    retries=1,
)

FULL = Profile(
    name="full",
    description="Exhaustive: the full GEMM grid sweep (truth), 120 s sustained, larger sweeps.",
    gemm=GemmConfig(exhaustive=True, budget_s=600.0),
    sustained=SustainedConfig(duration_s=120.0, window_s=5.0),
    collectives=CollectivesConfig(sizes_mib=(1, 4, 16, 64, 256, 1024, 4096), iters=50),
    sharing=SharingConfig(presets=("bert-large", "1b"), duration_s=15.0),
    finetune_presets=("1b", "8b-lora", "7b-full", "8b-qlora", "bert-large"),  # every preset;
    # misfits and missing NF4 backends not_applicable
    finetune_budget_s=1200.0,
    retries=1,
)

PROFILES: dict[str, Profile] = {p.name: p for p in (QUICK, STANDARD, FULL)}


def get_profile(name: str) -> Profile:
    if name not in PROFILES:
        raise ValueError(f"profile = {name!r}: expected one of {sorted(PROFILES)}")
    return PROFILES[name]


def with_data_dir(profile: Profile, data_dir: str | None) -> Profile:
    if data_dir is None:
        return profile
    return replace(profile, storage=replace(profile.storage, data_dir=data_dir))
