"""The catalog of reference nodes (inventories/reference-nodes.json): the papers' nodes, each valid as an inventory's
spillway_node.reference and citing the paper it comes from; an inventory may name one."""
from __future__ import annotations

import jsonschema
import pytest

import scale_model
from spillway import inventory

PAPERS = ("doppio-io-aware-spark-model-gatk4.txt", "nvme-ssd-for-spark-bigdata.txt",
          "monotasks-performance-clarity-sosp17.txt", "aws-virtualized-io-100tb-sort.txt",
          "cray-xc-datawarp-vs-lustre-hibench.txt")


@pytest.mark.parametrize("name", sorted(scale_model.reference_nodes()))
def test_every_node_is_a_valid_reference_and_cites_its_paper(name):
    schema = inventory._schema()
    node = scale_model.reference_nodes()[name]
    jsonschema.Draft202012Validator({**schema["$defs"]["reference_node"], "$defs": schema["$defs"]}).validate(node)
    assert any(node["source"].startswith(paper) for paper in PAPERS), node["source"]
    assert set(node.get("drives", {})) <= set(node["disks"])


def test_a_node_named_from_the_catalog_is_resolved_with_its_name():
    node = {"cores": 2, "reference": "gatk4-io-model"}
    described = scale_model.description(node)
    assert described["k"] == 18 and described["reference"]["catalog"] == "gatk4-io-model"
    assert described["disk_shares"] == {"hdd": pytest.approx(1 / 18), "ssd": pytest.approx(1 / 18)}
    with pytest.raises(scale_model.ScaleModelError, match="'floppy-node' is no node of reference-nodes.json. Fix"):
        scale_model.resolve("floppy-node")


def test_an_inventory_may_name_a_catalog_node_and_an_unknown_name_is_refused_with_the_names(tmp_path, monkeypatch):
    import shutil

    import yaml
    root = tmp_path / "inventories"
    shutil.copytree(inventory.INVENTORIES, root)
    monkeypatch.setattr(inventory, "INVENTORIES", root)
    monkeypatch.setattr("spillway.cluster_check.INVENTORIES", root)
    path = root / "local" / "group_vars" / "all.yml"

    def with_reference(reference):
        data = yaml.safe_load(path.read_text())
        data["spillway_node"] = {"memory_gib": 5, "cores": 2, "reference": reference}
        path.write_text(yaml.safe_dump(data))

    with_reference("gatk4-io-model")
    assert inventory.load("local").node_budget["reference"] == "gatk4-io-model"
    with_reference("aws-i2.8xlarge")                      # no hdd among its disks: the local inventory's hdd backend
    with pytest.raises(inventory.InventoryError, match="names no hdd disk"):
        inventory.load("local")
    with_reference("floppy-node")
    with pytest.raises(inventory.InventoryError, match=r"spillway_node.reference: 'floppy-node' is not one of \["):
        inventory.load("local")
