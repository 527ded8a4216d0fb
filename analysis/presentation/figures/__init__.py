"""Every figure of the pages (report.html of one run, compare.html of several) and of the notebooks, as
base64 PNG. A figure takes the frames it draws and plain values, never a run directory; the page computes each
frame once (metrics, access_patterns, across_runs) and hands it to every figure and row that shows it.

What both pages draw is drawn by one *panel* function on one matplotlib axes (fio curves, a request-size
histogram, request offsets, a throughput timeline with its stage spans): the single-run figures lay out one
row of panels, the multi-run ones a row per run (layout.py: encoding, naming, the panel grid, the stage spans).
One module per family: fio curves (fio.py), block requests' sizes and offsets (block_requests.py), throughput
over time of devices and backends (throughput.py), heat maps of bytes over time (heatmaps.py), and configurations
side by side: stage time against cores, grouped bars (configurations.py)."""
import matplotlib

matplotlib.use("Agg")  # no display on the hosts; must precede pyplot, which every module of this package imports
