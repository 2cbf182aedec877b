"""The stage ladder as data: what each stage is, where it comes from, and what it should buy.

This module imports nothing heavy (no torch, no triton), so the report can read it on any machine.
Implementations are attached to stages in `study.registry`.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Stage:
    number: str          # "01", "02", ... ; the same prefix names the .cu and the .py file
    slug: str            # "naive" -> cuda_kernels/01_naive.cu, triton_kernels/01_naive.py
    title: str
    seed: str            # which seed (shared/seeds) it reproduces, cited by number
    summary: str         # one sentence for the report's stage table
    notes: dict[str, str] = field(default_factory=dict)   # backend -> what that form could not express
    # backend -> (what its docstring claims about shared-memory banks or traffic, the check ncu's counters can
    # make of it: "ld" = shared loads conflict-free, "ld+st" = loads and stores, "" = shown, not judged).
    # study/present/hierarchy.py puts each beside reports/profile.csv's counters.
    claims: dict[str, tuple[str, str]] = field(default_factory=dict)
    # A stage that computes each fp32 product as `fp32_products` tensor-core products of split operands: its
    # ceiling on the fp32 roofline is that fraction of each peak it splits onto (`split_peaks`: ceiling key in
    # ceilings.json -> the split's name, for the label), and python -m study.accuracy measures its error
    # against float64 when `accuracy_study` is set.
    fp32_products: int = 1
    split_peaks: dict[str, str] = field(default_factory=dict)
    accuracy_study: bool = False
    # A stage of several registered forms a backend, each adding one technique: form name suffix ("-ws" for
    # cuda:<key>-ws, "" for the main form) -> the profile.csv column (study/measure/ncu.py) whose value at 4096^3
    # explains that form's step from the form before it (the previous form of its backend; for a backend's first,
    # the previous stage's main form).  In the registry's order of the forms (study/registry.py; tests check it):
    # the stage page's measured ladder lists each backend's forms in this order.
    step_counters: dict[str, str] = field(default_factory=dict)
    # What each form's code is, for the stage page's "What each form adds" (study/present/form_diffs.py): backend
    # -> form name suffix, in the registry's order of the forms -> the names that define the form in the stage's
    # file of that backend.  CUDA: the `constexpr Shape` its entries are instantiated from (`Cfg<NAME>`), or the
    # shapes a dispatch picks between, in the dispatch's order.  Triton and Gluon: the registry's TritonLaunch
    # function, then the kernel functions it runs (in that file, or a stage file it imports), named rather than
    # followed, since one kernel may serve two forms and pick its functions by a constexpr argument.
    # tests/test_stage_pages.py checks them against the registry; the page, that the launcher reaches each function.
    form_symbols: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=dict)
    # False: a stage of another regime than the ladders' reference size (4096^3), e.g. decode-shaped GEMMs; the
    # ladders leave it out, and its own page shows the shapes it is for.
    on_ladders: bool = True
    # Forms that are siblings rather than steps (stage 16's scalings): form suffix -> the suffix of the form its
    # ladder step is measured against, instead of the form above it.
    steps_from: dict[str, str] = field(default_factory=dict)
    # The stage whose files this one's are diffed against on its page when no earlier stage computes its
    # precision (stage 16's fp8 extends stage 14's wgmma kernels); else the stage before.
    builds_on: str = ""

    @property
    def key(self) -> str:
        return f"{self.number}_{self.slug}"


STAGES: tuple[Stage, ...] = (
    Stage(
        "01", "naive", "Naive: one thread per output",
        "seed 001 (naive SGEMM), seed 004 (MatrixMulKernel), seed 000 kernel 1",
        "Each thread computes one element of D with a K-long dot product read straight from global "
        "memory; neighbouring threads walk neighbouring rows, so a warp's loads of A are strided.",
    ),
    Stage(
        "02", "coalesced", "Coalesced global access",
        "seed 001 (global memory coalescing)",
        "Same arithmetic, but neighbouring threads now own neighbouring columns, so a warp reads one "
        "contiguous row segment of B and a single broadcast element of A per step.",
    ),
    Stage(
        "03", "smem_tiling", "Shared-memory tiling",
        "seed 004 (tiled matmul with boundary handling), seed 001 (shared memory)",
        "A block stages 32x32 tiles of A and B in shared memory, so every element fetched from global "
        "memory is reused 32 times; ragged edges are zero-filled.",
        claims={"cuda": ("shared loads cannot conflict (a broadcast of As, 32 consecutive words of Bs)", "ld"),
                "gluon": ("1% of the shared-load wavefronts conflict (the bank arithmetic predicted none)", "")},
    ),
    Stage(
        "04", "tiling_1d", "1D block tiling + thread coarsening",
        "seed 000 kernel 2, seed 001 (1D BlockTiling)",
        "Each thread computes a strip of 8 outputs down one column of a 64x64 tile, so one B value read from "
        "shared memory feeds 8 FMAs held in registers.",
        notes={"triton": "plain Triton has no shared memory outside tl.dot (which needs K >= 16) and layout "
               "conversions: operands come from global memory through L1 (ncu: no shared loads)",
               "gluon": "gl.dot_fma takes K >= 16 only, so BK is 16 where CUDA uses 8"},
        claims={"cuda": ("shared loads conflict-free; the As fill's stores conflict (8.3M on 67M)", "ld")},
    ),
    Stage(
        "05", "tiling_2d", "2D block tiling",
        "seed 000 kernel 3, seed 001 (2D BlockTiling)",
        "Each thread computes an 8x8 block of a 128x128 tile: per k it reads 8 A and 8 B values from shared "
        "memory into registers and does 64 FMAs (an outer product).",
        notes={"triton": "no shared memory, as in stage 04: operands come from L1 (ncu: no shared loads)",
               "gluon": "gl.dot_fma takes K >= 16 only, so BK is 16 where CUDA uses 8"},
    ),
    Stage(
        "06", "vectorized", "Vectorized (float4) access",
        "seed 000 kernel 4, seed 001 (vectorized access)",
        "As stage 05, with 16-byte global loads and stores and A stored transposed in shared memory, so a "
        "thread's operands arrive in 16-byte shared loads.",
        notes={"triton": "no vector type: the 16-byte accesses and the shared-memory transpose are the compiler's "
               "(axis analysis, layout conversion), found in the PTX",
               "gluon": "gl.dot_fma takes K >= 16 only, so BK is 16 where CUDA uses 8"},
        claims={"cuda": ("no shared-load bank conflicts (16-byte loads of the transposed As and of Bs)", "ld"),
                "gluon": ("gl.bank_conflicts reports 0 for all four shared accesses", "ld")},
    ),
    Stage(
        "07", "cp_async", "cp.async multi-stage pipeline",
        "seed 000 kernel 5",
        "A ring of shared-memory stages filled by asynchronous copies (cp.async), so the loads of later "
        "k-tiles overlap the FMAs on the current one.",
        notes={"triton": "tl.dot needs K >= 16: BLOCK_K 16 in 3 ring slots (num_stages=4) where CUDA has 4 slots of "
               "8; tl.dot fixes the register tile at 16x4 per thread"},
        claims={"cuda": ("the fragment reads are stage 06's: no shared-load conflicts", "ld")},
    ),
    Stage(
        "08", "warp_specialized", "Warp specialization",
        "seed 000 kernel 6",
        "Producer warps only copy tiles into the ring and consumer warps only compute, handing stages over "
        "through per-stage barriers instead of block-wide synchronisation.",
        notes={"triton": "not expressible: Triton 3.6 ignores warp_specialize for an fp32 FMA dot on sm_90, so this "
               "row is stage 07's kernel (identical PTX)",
               "gluon": "a partition arrives on an mbarrier from one thread after a partition-wide barrier, and "
               "waits are fenced by bar.sync, so the 8 consumer warps still meet twice per tile"},
    ),
    Stage(
        "09", "best_simt", "Best SIMT: warp tiling + pipeline, tuned per shape",
        "seed 000 kernels 3-5, seed 001",
        "Warp-tiled 16x8 register tiles per lane with conflict-free 16-byte shared loads, a 3-stage cp.async "
        "pipeline with K steps of 32, and the tile shape chosen per problem so the grid fills the GPU.",
        notes={"triton": "an FMA dot's register layout is Triton's choice; two side-by-side dots give 16x8 per "
                         "thread, and the autotuner picks among 8 configs per shape"},
        claims={"cuda": ("conflict-free 16-byte shared loads", "ld"),
                "gluon": ("no shared-memory bank conflicts", "ld")},
    ),
    Stage(
        "10", "wmma", "WMMA fragments, every type pair",
        "seed 003 (generic WMMA GEMM over type pairs), seed 000 kernel 7",
        "The first tensor-core stage: each warp multiplies 16x16x16 (or 32x8x16, 8x32x16, 16x16x8 for tf32, "
        "8x8x4 for fp64) fragments with the CUDA WMMA API, for every input/accumulator type pair the API "
        "offers, with A and B in either storage order and ragged edges staged through zero-padded tiles.",
        notes={"triton": "no WMMA fragment shapes (tile and instruction are Triton's: wgmma for fp16, bf16, tf32, "
                         "int8; fp64 falls back to mma.sync m16n8k16.f64); tl.dot takes no uint8 (\"only int8 "
                         "supported\"), so there is no u8 -> i32 pair",
               "gluon": "no WMMA API: mma_v2 with operand-fragment layouts, loaded straight from global memory, "
                        "m16n8kK shapes only (no 32x8x16, 8x32x16); no uint8 (\"only int8 supported\"); tf32 "
                        "operands are not rounded (no cvt.rna.tf32: the tensor core truncates); fp64 and "
                        "f16 -> f16 compile but are not registered (fp64 alpha/beta would arrive as fp32)"},
    ),
    Stage(
        "11", "wmma_async", "WMMA + cp.async shared-memory staging",
        "seed 000 kernel 7b",
        "As stage 10 for fp16 and bf16, but a block's A and B tiles arrive in shared memory through a multi-"
        "stage cp.async ring, so the copies of later k-tiles overlap the tensor-core work on the current one.",
        notes={"triton": "the ring is num_stages=4; Triton feeds wgmma from it, not WMMA-shaped fragments",
               "gluon": "no padded shared layout in Triton 3.6 (PaddedSharedLayout fails to lower), so the tiles are "
                        "unpadded and their fragment loads conflict (ncu: 495M of 570M load wavefronts); "
                        "shared-to-fragment loads become ldmatrix by the compiler's choice"},
        claims={"gluon": ("unpadded tiles: most fragment loads conflict (495M of 570M load wavefronts)", "")},
    ),
    Stage(
        "12", "mma_ldmatrix", "mma.sync m16n8k16 + ldmatrix, 2D warp tiling",
        "seed 000 kernel 8 (and its 2D warp-tiled variant)",
        "WMMA's opaque fragments give way to the PTX instruction itself: ldmatrix loads the operand fragments "
        "from shared memory and each warp issues mma.sync m16n8k16 over a large 2D tile of D held in registers.",
        notes={"triton": "Triton picks wgmma on Hopper whatever the launch options: the mma.sync path is reached only "
                         "through the DISABLE_MMA_V3 environment variable (in the cache key, not in the user docs)",
               "gluon": "ldmatrix is the compiler's lowering of a shared load into a DotOperandLayout; one ring "
                        "allocation makes the barrier analysis add a second bar.sync per k-tile"},
        claims={"cuda": ("the 'before' case, unpadded rows: ldmatrix conflicts 4-way on A and 8-way on B", ""),
                "gluon": ("218M of 268M shared-load wavefronts are conflicts", "")},
    ),
    Stage(
        "13", "swizzle", "XOR-swizzled shared memory",
        "seed 000 kernel 9",
        "Stage 12 with the shared-memory tiles stored under an XOR swizzle of their 16-byte chunks, so that "
        "neither the cp.async stores nor the ldmatrix loads hit the same bank twice (measured with ncu).",
        notes={"triton": "the swizzle is TMA's 128-byte hardware mode, chosen by the compiler, not a hand-written XOR; "
                         "warp_specialize compiles to the same binary at 8 warps on sm_90 in Triton 3.6",
               "gluon": "a 16-byte cp.async cannot be partial, so the last partial k-tile is copied through "
                        "registers element by element"},
        claims={"cuda": ("XOR swizzle: ldmatrix and cp.async predicted conflict-free; 1.6% of load wavefronts "
                         "conflict, attributed (not measured) to the epilogue's reads", ""),
                "gluon": ("128-byte NVMMASharedLayout swizzle: load conflicts under 1% of wavefronts", "ld")},
    ),
    Stage(
        "14", "wgmma", "wgmma fed by TMA: warp-specialized, persistent, clustered",
        "no seed (none covers Hopper: seed 000 stops at mma.sync, stage 13); anchors: pranjalssh/fast.cu, "
        "the Gluon tutorials 07-08, ThunderKittens' H100 levels",
        "Hopper's warpgroup MMA reads both operands straight from 128-byte-swizzled shared memory that TMA "
        "fills; each form adds one technique: one warpgroup, then a producer warpgroup feeding two consumer "
        "warpgroups (setmaxnreg), then a persistent grid whose ring runs on across tiles, then clusters of two "
        "blocks sharing B by TMA multicast, then D out through shared memory (stmatrix) and TMA stores.",
        # reports/h100/profile.csv and docs/14_wgmma.md ("ncu at 4096^3"): one wgmma a warpgroup replaces stage
        # 13's stream of ldmatrix and mma.sync (instructions 70 -> 28M at fp16; its tensor-pipe activity, 79% for
        # fewer TFLOP/s than -1wg's 56%, does not compare across the two instructions); a producer that never
        # drains the ring raises the tensor pipe's activity (56 -> 80%), a persistent grid a little more (82%);
        # clusters' B multicast and the TMA-store epilogue's whole-sector writes cut L2 bytes (docs: 1.49 -> 1.28
        # GB for the latter); the 256x192 tile dispatch brings the tensor pipe to 94%.
        step_counters={"-1wg": "instructions", "-tma": "tensor_pct", "-ws": "tensor_pct", "-persistent": "tensor_pct",
                       "-cluster": "l2_bytes", "-tma-store": "l2_bytes", "": "tensor_pct"},
        form_symbols={
            "cuda": {"-1wg": ("ONE_WARPGROUP",), "-ws": ("SPECIALIZED",), "-persistent": ("SCHEDULED",),
                     "-cluster": ("CLUSTERED",), "-tma-store": ("CLUSTERED_TMA",), "": ("WIDE", "TMA_STORED")},
            "triton": {"-tma": ("gemm_tma", "launch_tma_tiles", "tma_tile_kernel"),
                       "": ("gemm", "launch_tma", "tma_persistent_kernel")},
            "gluon": {"-1wg": ("gemm_1wg", "wgmma_1wg_kernel", "_load_ktile"),
                      "-ws": ("gemm_ws", "wgmma_ws_kernel", "_loader_ws", "_consumer_ws"),
                      "-persistent": ("gemm_persistent", "wgmma_ws_kernel", "_loader", "_consumer"),
                      "": ("gemm", "wgmma_kernel", "_loader", "_consumer", "_epilogue_piece")}},
    ),
    Stage(
        "15", "tcec", "TCEC: fp32 GEMM on fp16 tensor cores with error correction",
        "seed 002 (Ootomo & Yokota 2022, section 4.4, eqs. (6)-(7))",
        "Each fp32 operand is split into an fp16 high part and a scaled fp16 low part; three fp16 tensor-core "
        "products (hi*hi, lo*hi, hi*lo) rebuild the fp32 product, and hi*hi is summed outside the tensor cores "
        "in round-to-nearest fp32.  Variants show what the correction and the rounding buy.",
        notes={"triton": "the same pre-split operands; Triton waits on every dot that is not a loop-carried "
                         "accumulator (wait_group 0 after hi*hi and after lo*hi), and the promotion is an inline "
                         "add.rn.f32 so that no pass folds it back into the tensor core",
               "gluon": "the CUDA kernel's twin on rung 14's Gluon machinery (warp_specialize, SS warpgroup_mma); "
                        "Gluon adds three bar.sync per k-tile in each consumer"},
        # Seed 002, Section 4.4.1 and Figure 7: "dividing the theoretical peak performance of FP16-TC ... by 3".
        fp32_products=3, split_peaks={"fp16_tc_tflops": "TCEC", "tf32_tc_tflops": "3xTF32"}, accuracy_study=True,
    ),
    Stage(
        "16", "fp8", "fp8 e4m3 on wgmma: per-tensor, row-wise and block scaling, promoted to fp32",
        "no seed (none covers fp8); anchors: DeepGEMM (1x128 / 128x128 block scaling, promotion every 128 k), "
        "the DeepSeek-V3 report (section 3.3.2, the tensor core's limited accumulation precision), triton-lang/triton "
        "PR #5461 (Triton's persistent TMA fp8 matmul)",
        "The Hopper rung on e4m3 operands (wgmma k32, twice the bf16 rate), each operand with fp32 scales per "
        "tensor, per row or per 1x128 / 128x128 block; every 128 k the tensor core's partial sum is added into "
        "fp32 registers (times the block's scales), because the tensor core adds fp8 products with only about "
        "13-14 mantissa bits (13 in SageAttention2's measurement, about 14 in the DeepSeek-V3 report).  "
        "One form leaves the whole K in the tensor core, to show what promotion buys.",
        steps_from={"-row": "", "-block": "", "-tcacc": ""}, builds_on="14",
    ),
    Stage(
        "17", "split_k", "Decode GEMMs: swap-AB, split-K and stream-K at DRAM speed",
        "seed 004 (the bandwidth-bound regime: bytes per FLOP decide); Osama et al., Stream-K (PPoPP 2023)",
        "At M <= 128 tokens a GEMM's cost is reading the weights B once.  The tokens move to wgmma's N side "
        "(swap-AB: 128 columns of D by 16-128 tokens a tile) and K is cut over the blocks (split-K, or stream-K: "
        "every SM the same number of k-slices), so a 4096-column layer keeps all SMs streaming; the partial "
        "sums are added by the tile's last block in block order, so D is bit-identical run to run.",
        on_ladders=False,
    ),
)


def stage(number_or_key: str) -> Stage:
    for s in STAGES:
        if number_or_key in (s.number, s.key, s.slug):
            return s
    raise KeyError(f"no stage {number_or_key!r}; known: {[s.key for s in STAGES]}")
