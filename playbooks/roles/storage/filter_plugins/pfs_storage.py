"""Where the workers see each `kind: pfs` backend (docs/pfs.md), in one place for the role's tasks and tests.

An existing parallel file system is where the inventory's `mount` says; a GlusterFS volume the harness builds
(`glusterfs`) is mounted on each worker below the cluster's own root, so teardown's removal of that root
covers its mount point.
"""
import posixpath


def spillway_pfs_mounts(backends, mount_root):
    """{backend: mount point} for the pfs backends of spillway_backends."""
    return {
        name: posixpath.normpath(backend["mount"]) if "mount" in backend else f"{mount_root}/{name}"
        for name, backend in sorted((backends or {}).items())
        if backend.get("kind") == "pfs"
    }


def spillway_pfs_glusterfs_mounts(backends, mount_root):
    """{backend (= volume name): mount point} for the pfs backends whose GlusterFS volume the harness builds."""
    mounts = spillway_pfs_mounts(backends, mount_root)
    return {name: mount for name, mount in mounts.items() if "glusterfs" in backends[name]}


def spillway_pfs_node_dir(mount, cluster, host):
    """The per-node directory of a host on a shared mount, DataWarp style: <mount>/spillway/<cluster>/<host>."""
    return posixpath.join(mount, "spillway", cluster, host)


class FilterModule:
    def filters(self):
        return {"spillway_pfs_mounts": spillway_pfs_mounts, "spillway_pfs_node_dir": spillway_pfs_node_dir,
                "spillway_pfs_glusterfs_mounts": spillway_pfs_glusterfs_mounts}
