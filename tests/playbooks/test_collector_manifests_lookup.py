"""Role collectors' lookup collector_manifests: one folder level, files only, sorted; the repository's collectors all
found; an unreadable directory named in the error."""
import importlib.util

import pytest
from ansible.errors import AnsibleError

from spillway import PLAYBOOKS, REPO

spec = importlib.util.spec_from_file_location(
    "collector_manifests", PLAYBOOKS / "roles/collectors/lookup_plugins/collector_manifests.py")
plugin = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plugin)


def lookup(*directories):
    return plugin.LookupModule().run(list(directories))


def test_one_level_below_files_only_sorted(tmp_path):
    for name in ("zeta", "alpha"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "collector.yml").write_text("name: x\n")
    (tmp_path / "lib").mkdir()                                   # no manifest: shared code, not a collector
    (tmp_path / "alpha" / "nested").mkdir()
    (tmp_path / "alpha" / "nested" / "collector.yml").write_text("name: y\n")   # two levels down: not one
    (tmp_path / "dir-named").mkdir()
    (tmp_path / "dir-named" / "collector.yml").mkdir()           # a folder with the manifest's name
    (tmp_path / "collector.yml").write_text("name: z\n")          # the directory's own file: not a collector's
    assert lookup(tmp_path) == [str(tmp_path / "alpha/collector.yml"), str(tmp_path / "zeta/collector.yml")]


def test_the_repositorys_collectors_are_every_folder_with_a_manifest():
    found = lookup(REPO / "collectors")
    assert [p.split("/")[-2] for p in found] == sorted(p.parent.name for p in (REPO / "collectors").glob("*/collector.yml"))
    assert len(found) >= 7


def test_a_missing_directory_is_an_error_naming_it(tmp_path):
    with pytest.raises(AnsibleError, match="cannot list .*/nowhere"):
        lookup(tmp_path / "nowhere")
