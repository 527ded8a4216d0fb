"""The I/O-aware Spark stage model (Doppio, `../shared/papers/doppio-io-aware-spark-model-gatk4.txt`, §IV-C):

    t_stage = max(t_scale, t_read_limit, t_write_limit)
    t_scale = M / (N * P) * t_avg + delta_scale
    t_io_limit = D / (N * BW(request size)) + delta_io        (one for reads, one for writes)
    t_app = sum of t_stage

fitted per stage from profiling configurations (the paper's four sample runs: P=1 and P=2 on the fast
backend, then the slow backend under the local dirs and under HDFS), and evaluated for another placement,
core count or node count. BW comes from the fio sweep of the target backend at the stage's measured mean
request size (block trace), or from the emulation profile's caps when no sweep of that backend exists.
What is fitted from what, and the limits: docs/models.md.

One module per concern, each importing only those before it: formulas (the I/O paths and the paper's equations),
bandwidths and configurations (the inputs, from a run's tables), fit_predict (StageModel, fit, Target, predict),
evaluation (errors against measured stage times, evaluate), export (to_json).
"""
