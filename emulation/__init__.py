"""Emulated multi-node clusters on one machine: network namespaces with their own hostname, address and sshd,
reached by Ansible over SSH like real hosts (docs/emulated-cluster.md)."""
