"""Lookup collector_manifests: the collector.yml of every folder directly under the given directories, sorted.

A lookup runs inside Ansible's own process on the controller; the find module it replaces cost a module run (about
half a second) at every collectors start and stop, twice per workload run. fileglob cannot do it: it takes no
wildcard in a folder's name.
"""
import os

from ansible.errors import AnsibleError
from ansible.plugins.lookup import LookupBase

DOCUMENTATION = """
name: collector_manifests
short_description: the collector.yml files one folder level below a directory
description: For each directory given, the paths of <directory>/<name>/collector.yml that are files, sorted.
options:
  _terms:
    description: directories on the controller (the collectors' source folder)
    required: true
"""


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        manifests = []
        for directory in terms:
            try:
                entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
            except OSError as err:
                raise AnsibleError(f"collector_manifests: cannot list {directory}: {err.strerror}") from err
            manifests += [path for entry in entries if entry.is_dir()
                          for path in [os.path.join(entry.path, "collector.yml")] if os.path.isfile(path)]
        return manifests
