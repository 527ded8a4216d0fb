"""Experiments that combine the harness (spillway), the analysis and the emulated clusters: the model's validation
and the harness's own benchmarks. The only package that imports all three; `spillway/` imports neither `analysis`
nor `emulation` (docs/architecture.md, "experiments/")."""
