"""How a node's memory budget (spillway_node.memory_gib) is shared out: the one place that sizes the JVMs under it.

docs/cluster.md, "Node budgets". A real node's memory goes to its daemons, its executors and, what they leave, the
page cache. Under a budget the JVMs' maxima follow it instead of the cluster's fixed settings, which were made for a
host with no limit (24 GiB here) and would leave GiBs of page cache inside a small budget:
- the Hadoop daemons of a host share at most `daemons_share` of its budget: each configured heap_mb scaled by the
  same factor, none below `min_heap_mb`;
- the Spark driver (client mode: a JVM outside YARN on the controller) gets an eighth of the budget, at least
  512 MiB and at most spark.driver.memory as configured;
- a worker's NodeManager offers YARN the rest (less the driver where the controller is a worker too), capped by
  yarn_nodemanager_memory_mb;
- Spark's executors are sized so that the AM and `spark_executor_instances` executors fit one worker's offer,
  never above spark.executor.memory as configured and never below `min_executor_mb` (then fewer executors fit:
  YARN starts what the offer holds).
The floor is the smallest budget (in 128 MiB steps) whose offer holds the AM and one executor of min_executor_mb:
a smaller one leaves a Spark application waiting for an executor that never comes.
Without a budget every value is the configured one and there is no floor.
"""

import math

BUDGET_STEP_MB = 128


def mebibytes(size):
    """A JVM memory size as Spark and Java write it (512m, 1g, 1536) in MiB."""
    text = str(size).strip().lower()
    units = {"k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 * 1024}
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(int(text) / (1024 * 1024))  # bare bytes, as Java reads them


def container_mb(heap_mb, allocation_mb):
    """What YARN reserves for a Spark JVM of heap_mb: the heap, Spark's overhead (10 %, at least 384 MiB), rounded
    up to the scheduler's allocation unit."""
    asked = heap_mb + max(384, int(heap_mb * 0.10))
    return int(math.ceil(asked / allocation_mb) * allocation_mb)


def _heaps(budget_mb, daemons, daemons_share, min_heap_mb):
    configured = {daemon["name"]: int(daemon["heap_mb"]) for daemon in daemons}
    if not budget_mb or not configured:
        return configured
    factor = min(1.0, budget_mb * daemons_share / sum(configured.values()))
    return {name: max(min_heap_mb, int(heap * factor)) if factor < 1 else heap for name, heap in configured.items()}


def _driver(budget_mb, configured_mb):
    return min(configured_mb, max(512, budget_mb // 8)) if budget_mb else configured_mb


def _offer(budget_mb, heaps, nodemanager_mb, driver_mb):
    if not budget_mb:
        return nodemanager_mb
    return max(0, min(nodemanager_mb, budget_mb - sum(heaps.values()) - driver_mb))


def spillway_node_memory(spillway_node, hadoop_daemons, group_names, settings):
    """The memory plan of one host (group_names: its inventory groups): heaps, YARN offer, Spark driver and executor
    memory, floor. settings: yarn_nodemanager_memory_mb, yarn_scheduler_min_allocation_mb, spark_driver_memory,
    spark_executor_memory, spark_yarn_am_memory, spark_executor_instances, daemons_share, min_heap_mb,
    min_executor_mb."""
    budget_mb = int(float(spillway_node.get("memory_gib", 0)) * 1024)
    daemons = [daemon for daemon in hadoop_daemons if daemon["group"] in group_names]
    share, min_heap = float(settings["daemons_share"]), int(settings["min_heap_mb"])
    nodemanager_mb, allocation = int(settings["yarn_nodemanager_memory_mb"]), int(settings["yarn_scheduler_min_allocation_mb"])
    configured_executor = mebibytes(settings["spark_executor_memory"])
    min_executor = min(int(settings["min_executor_mb"]), configured_executor)
    am_container = container_mb(mebibytes(settings["spark_yarn_am_memory"]), allocation)

    configured_driver = mebibytes(settings["spark_driver_memory"])
    drives_here = "controller" in group_names   # the driver's memory counts where it runs

    def driver_in(budget):
        return _driver(budget, configured_driver) if drives_here else 0

    heaps = _heaps(budget_mb, daemons, share, min_heap)
    offer = _offer(budget_mb, heaps, nodemanager_mb, driver_in(budget_mb))
    executor = configured_executor
    if budget_mb:
        per_executor = (offer - am_container) // max(1, int(settings["spark_executor_instances"]))
        fitting = [m for m in range(min_executor, configured_executor + 1, 128) if container_mb(m, allocation) <= per_executor]
        executor = fitting[-1] if fitting else min_executor
    plan = {"budget_mb": budget_mb, "heap_mb": heaps, "heaps_mb": sum(heaps.values()), "nodemanager_offer_mb": offer,
            "spark_driver_memory_mb": _driver(budget_mb, configured_driver), "spark_executor_memory_mb": executor, "am_container_mb": am_container,
            "executor_container_mb": container_mb(executor, allocation), "floor_mb": 0}
    if budget_mb:
        need = am_container + container_mb(min_executor, allocation) if "workers" in group_names else 0
        def holds(budget):
            heaps_there = _heaps(budget, daemons, share, min_heap)
            return (_offer(budget, heaps_there, nodemanager_mb, driver_in(budget)) >= need
                    and sum(heaps_there.values()) + driver_in(budget) <= budget)

        floor = BUDGET_STEP_MB
        while not holds(floor):
            floor += BUDGET_STEP_MB
        plan["floor_mb"] = floor
        # what this budget must hold, by what needs it (preflight names each when the budget is too small)
        plan["needs_mb"] = {**{f"{name} heap": heap for name, heap in heaps.items()},
                            **({"the Spark driver": driver_in(budget_mb)} if drives_here else {}),
                            **({"a Spark AM and one executor (YARN)": need} if need else {})}
    return plan


class FilterModule:
    def filters(self):
        return {"spillway_node_memory": spillway_node_memory}
