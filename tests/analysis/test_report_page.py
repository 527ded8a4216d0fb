"""report: the HTML page of a run assembled from recorded fixtures, with real values in it."""
import base64
import json
import re
import shutil
from html import unescape
from pathlib import Path

import yaml

from analysis.parsers.jhist import parse_jhist
from analysis.report_page import write_report
from analysis.tables import write_tables
from conftest import TOOLS, add_pfs_recordings

REPO = Path(__file__).resolve().parents[2]


def test_report_of_a_run(run_dir):
    html = write_report(run_dir).read_text()
    run_id = run_dir.name
    assert f"Spillway run {run_id}" in html
    images = re.findall(r'<img alt="([^"]*)" src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)
    alts = [alt for alt, _ in images]
    # (a) fio, (c) request sizes where a block trace exists, (d) throughput per workload with iostat
    assert any(alt.startswith("fio bandwidth") for alt in alts)
    assert any(alt.startswith("request sizes during fio-sweep") for alt in alts)
    assert sum(alt.startswith("throughput during") for alt in alts) == 2
    assert all(run_id in alt for alt in alts)
    for _, data in images:
        assert base64.b64decode(data)[:8] == b"\x89PNG\r\n\x1a\n"
    # (b) stage table with units, step table with the failed and the unfinished step flagged
    assert "mapToPair at TinyShuffle.java:14" in html and "7.3 KiB" in html      # 7456 bytes of shuffle write
    assert re.search(r'class="status-failed">failed</td>', html)
    assert re.search(r'class="status-running">running</td>', html)
    assert "step validate of workload spark-tiny: running" in html
    # fio points carry units
    assert re.search(r"\d MB/s</td>", html) and re.search(r"\d IOPS</td>", html)
    # (e) emulation notice from the manifest
    assert "emulated" in html and "150 requests/s" in html and "adds no seek latency" in html
    assert re.search(r"read: [\d,]+ requests, write: [\d,]+ requests", html)
    for jhist in sorted((run_dir / "raw" / "vm").glob("mr-history/*/mr-history/*.jhist")):   # collectors' recordings
        job, _counters = parse_jhist(jhist)
        assert f"<td>{job['job_id']}</td><td>{job['job_name']}</td>" in html


def test_report_with_block_trace(run_dir):
    trace = TOOLS / "blocktrace" / "blocktrace.tsv"
    target = run_dir / "raw" / "vm" / "blocktrace" / "spark-tiny"
    target.mkdir(parents=True)
    shutil.copy(trace, target / "blocktrace.tsv")
    html = write_report(run_dir).read_text()
    assert 'alt="request sizes during spark-tiny' in html and 'alt="request sizes during fio-sweep' in html


def test_report_shows_the_bricks_side_only_when_a_gluster_profile_was_recorded(run_dir):
    assert 'id="pfs-servers"' not in write_report(run_dir).read_text()
    add_pfs_recordings(run_dir)
    write_tables(run_dir)  # the first report wrote the tables without it
    html = write_report(run_dir).read_text()
    section = html[html.index('id="pfs-servers"'):]
    section = section[:section.index("</table>")]
    # both bricks of the recorded volume, each with its bytes and its costliest operations with their units
    assert section.count("<td>pfs</td>") == 2
    assert re.findall(r"WRITE [\d,]+ x [\d.]+ ms", section) and re.search(r"\d MiB</td>", section)


def test_report_shows_the_clients_side_of_a_pfs_backend(run_dir):
    add_pfs_recordings(run_dir)
    html = write_report(run_dir).read_text()
    section = html[html.index('id="pfs-clients"'):]
    section = section[:section.index("</table>")]
    assert "<td>worker1</td><td>pfs (fuse.glusterfs)</td>" in section
    assert re.search(r"READ [\d,]+, WRITE [\d,]+", section) and re.search(r"\d MiB</td>", section)


def test_a_node_budget_that_killed_a_process_is_named_first_with_the_budget_and_the_fix(run_dir):
    fixtures = TOOLS.parent / "node-budget"
    for host, recording in (("vm", "terasort-localhost"), ("worker1", "oom-worker1")):
        shutil.copytree(fixtures / recording, run_dir / "raw" / host / "node-budget" / "spark-tiny")
    html = write_report(run_dir).read_text()
    problems = unescape(html[html.index('id="problems"'):html.index('id="emulation"')])
    assert ("worker1's node budget (256.0 MiB, spillway_node.memory_gib) ran out of memory during spark-tiny: the "
            "kernel killed 1 of the node's processes (OOM)") in problems
    assert "Fix: raise spillway_node.memory_gib" in problems
    assert "vm's node budget" not in problems     # the budget that killed nothing is not a problem


def test_report_of_a_partial_run(tmp_path):
    run = tmp_path / "partial"
    (run / "raw").mkdir(parents=True)
    html = write_report(run).read_text()
    assert "manifest.json is missing" in html and "No steps recorded" in html
    assert "whether the\n  storage was real or emulated is unknown" in html


def test_the_emulation_notice_names_the_hdd_drive_model_and_its_parameters(run_dir):
    """A run on the hdd disk model (issue 21) records the profile with its model: the report names the drive, the
    parameters with their units and the datasheet they come from, not a JSON blob."""
    profile = yaml.safe_load((REPO / "inventories/storage-profiles.yml").read_text())["profiles"]["hdd"]
    manifest_file = run_dir / "manifest.json"
    manifest = json.loads(manifest_file.read_text())
    manifest["emulation"]["profiles"]["hdd"] = profile
    manifest_file.write_text(json.dumps(manifest))
    html = unescape(write_report(run_dir).read_text())
    assert "spillway-hdd-model of a Western Digital Ultrastar DC HC310" in html
    assert "read-seek-avg-ms 7.4" in html and "outer-rate 255000000" in html and "rpm 7200" in html
    assert "Ultrastar DC HC310, 3.5 inch Serial ATA Hard Disk Drive, revision 1.4" in html
    assert "assumed, not on the datasheet: inner-rate" in html and '{"name"' not in html


def test_the_facts_name_a_scale_models_reference_and_k_and_take_no_value_as_a_number_it_is_not():
    from analysis.report_page import _scale_model_fact
    scaled = {"reference": {"name": "the GATK4 paper's node", "source": "its Table I", "cores": 36},
              "emulated_cores": 2.0, "k": 18.0, "disk_shares": {"hdd": 1 / 18, "ssd": 2 / 18}}
    [(label, text)] = _scale_model_fact({"emulation": {"scale_model": scaled}})
    assert label == "scale model of"
    assert text == "the GATK4 paper's node (its Table I): k = 18.000, each emulated disk hdd 0.056 of one, ssd 0.111 of one"
    assert _scale_model_fact({"emulation": {}}) == [] and _scale_model_fact({"emulation": {"scale_model": "x"}}) == []
    hostile = _scale_model_fact({"emulation": {"scale_model": {**scaled, "k": "18; rm -rf /", "disk_shares": [1]}}})
    assert hostile[0][1] == "the GATK4 paper's node (its Table I): k = -, each emulated disk "
